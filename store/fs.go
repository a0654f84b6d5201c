package store

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// FS is the file system the file backend keeps runs on. Every byte the
// backend reads or writes, every fsync, rename, link and lock goes through
// it, so that a test double can inject faults and simulate power loss
// (package simfs keeps durable and volatile bytes apart). Production uses
// the operating system's file system (the default; see WithFS).
//
// Paths are absolute and cleaned. Errors follow package os: *fs.PathError
// wrapping a syscall.Errno, so errors.Is(err, fs.ErrNotExist) and
// errors.Is(err, syscall.ENOSPC) work on them.
type FS interface {
	// OpenFile opens name like os.OpenFile; flag combines O_RDONLY,
	// O_WRONLY or O_RDWR with O_APPEND, O_CREATE, O_EXCL, O_TRUNC. A
	// directory may be opened O_RDONLY (to lock it).
	OpenFile(name string, flag int, perm fs.FileMode) (File, error)
	// Mkdir creates a directory (syscall.EEXIST if name exists).
	Mkdir(name string, perm fs.FileMode) error
	// Remove removes a file or an empty directory.
	Remove(name string) error
	// Rename renames oldpath to newpath, replacing a file there.
	Rename(oldpath, newpath string) error
	// Link makes newname a hard link to oldname (syscall.EEXIST if
	// newname exists).
	Link(oldname, newname string) error
	// Stat describes name, following symbolic links.
	Stat(name string) (fs.FileInfo, error)
	// Lstat describes name without following a symbolic link.
	Lstat(name string) (fs.FileInfo, error)
	// ReadDir lists a directory's entries sorted by name.
	ReadDir(name string) ([]fs.DirEntry, error)
	// SyncDir makes the directory's entries (files created, linked,
	// renamed or removed in it) durable: fsync(2) of the directory.
	SyncDir(name string) error
}

// File is an open file of an FS.
type File interface {
	io.Reader
	io.ReaderAt
	// Write writes at the file offset, or at the end with O_APPEND; one
	// call is one write(2).
	io.Writer
	// WriteAt writes at off with one pwrite(2), extending the file when
	// it writes past the end. The file must not be opened O_APPEND.
	io.WriterAt
	io.Closer
	// Name returns the name the file was opened with.
	Name() string
	// Stat describes the open file.
	Stat() (fs.FileInfo, error)
	// Truncate changes the file's size.
	Truncate(size int64) error
	// Sync makes the file's data and metadata durable: fsync(2).
	Sync() error
	// Datasync makes the file's data and the metadata needed to read it
	// back (its size) durable, not its timestamps: fdatasync(2).
	Datasync() error
	// Lock takes a flock(2)-style lock that belongs to this open file
	// (exclusive or shared), waiting for it when wait is set; without
	// wait a lock held elsewhere fails with syscall.EWOULDBLOCK. Asking
	// again converts the lock this file holds.
	Lock(exclusive, wait bool) error
	// Unlock releases the lock this file holds.
	Unlock() error
	// WriterLock takes this open file's writer mark, a lock apart from
	// Lock's that also belongs to the open file and is released by
	// Close: every writable handle of a stream holds it shared while it
	// is open, and a closing writer asks for it exclusive, without
	// waiting, before it cuts off the zero tail — a tail another open
	// writer may be using (docs/decisions.md, "A closing writer trims
	// only as the last one"). Asking again converts it; without wait a
	// mark held elsewhere fails with syscall.EWOULDBLOCK.
	// errors.ErrUnsupported where the platform or file system has no
	// such lock.
	WriterLock(exclusive, wait bool) error
	// WriterUnlock releases this open file's writer mark: a closing
	// writer that could not take it exclusive gives its own up before
	// asking once more, so that of writers closing at once one trims.
	// errors.ErrUnsupported where WriterLock is.
	WriterUnlock() error
}

// Option configures Open.
type Option func(*Store)

// WithFS makes the Store keep its runs on fsys instead of the operating
// system's file system. Run.Adopt and Ownership.Handoff need descriptors
// a child process can inherit and work only on the operating system's
// file system.
func WithFS(fsys FS) Option {
	return func(s *Store) { s.fsys = fsys }
}

// isWouldBlock reports whether err is a lock's "held elsewhere" answer.
func isWouldBlock(err error) bool { return errors.Is(err, syscall.EWOULDBLOCK) }

// syncDir fsyncs a directory so that entries created, linked or renamed in
// it survive a crash.
func syncDir(fsys FS, dir string) error {
	if err := fsys.SyncDir(dir); err != nil {
		return storageErr("fsync", dir, err)
	}
	return nil
}

// mkdirAllSync creates dir and any missing parents, fsyncing the parent of
// every directory it creates.
func mkdirAllSync(fsys FS, dir string) error {
	dir = filepath.Clean(dir)
	if fi, err := fsys.Stat(dir); err == nil {
		if !fi.IsDir() {
			return storageErr("mkdir", dir, syscall.ENOTDIR)
		}
		return nil
	}
	parent := filepath.Dir(dir)
	if parent != dir {
		if err := mkdirAllSync(fsys, parent); err != nil {
			return err
		}
	}
	if err := fsys.Mkdir(dir, 0o755); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil
		}
		return storageErr("mkdir", dir, err)
	}
	return syncDir(fsys, parent)
}

// readFile reads a whole file, into a buffer sized to it as it stands
// (the index of a 100 000-event record is 0.8 MB, which io.ReadAll
// alone would read through a dozen growing buffers).
func readFile(fsys FS, name string) ([]byte, error) {
	f, err := fsys.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	size := int64(0)
	if info, err := f.Stat(); err == nil && info.Mode().IsRegular() {
		size = info.Size()
	}
	buf := bytes.NewBuffer(make([]byte, 0, size+bytes.MinRead))
	if _, err := buf.ReadFrom(f); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
