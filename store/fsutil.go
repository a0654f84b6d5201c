package store

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// fileOps is the file access the append path uses. Tests swap it to inject
// write, fsync and truncate failures.
type fileOps struct {
	write    func(f *os.File, b []byte) (int, error)
	sync     func(f *os.File) error
	truncate func(f *os.File, size int64) error
}

var defaultFileOps = fileOps{
	write:    (*os.File).Write,
	sync:     fdatasync,
	truncate: (*os.File).Truncate,
}

// syncDir fsyncs a directory so that entries created, linked or renamed in
// it survive a crash.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// mkdirAllSync creates dir and any missing parents, fsyncing the parent of
// every directory it creates.
func mkdirAllSync(dir string) error {
	dir = filepath.Clean(dir)
	if fi, err := os.Stat(dir); err == nil {
		if !fi.IsDir() {
			return &fs.PathError{Op: "mkdir", Path: dir, Err: fs.ErrExist}
		}
		return nil
	}
	parent := filepath.Dir(dir)
	if parent != dir {
		if err := mkdirAllSync(parent); err != nil {
			return err
		}
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil
		}
		return err
	}
	return syncDir(parent)
}
