package durable

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// WriteFile replaces the file at path with data as one step: data is
// written to a temporary file beside it, fsynced and renamed over path,
// and the directory is fsynced. A reader sees the old bytes or the new,
// never an empty or half-written file, and a crash leaves one of the two
// (os.WriteFile truncates first). A file that exists keeps its mode (perm
// is the mode of a new one); a symbolic link at path is followed, so the
// file it names is replaced and the link kept. Errors are *os.PathError
// and *os.LinkError from the steps; nothing is left behind on an error.
func WriteFile(path string, data []byte, perm fs.FileMode) error {
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if fi, err := os.Stat(path); err == nil {
		perm = fi.Mode().Perm()
	}
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	err = f.Chmod(perm)
	if err == nil {
		_, err = f.Write(data)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	return SyncDir(dir)
}
