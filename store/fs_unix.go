//go:build unix

package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"

	"github.com/obversa/obversa/internal/durable"
	"github.com/obversa/obversa/internal/regfile"
	"github.com/obversa/obversa/internal/shellquote"
)

// osFS is the operating system's file system, the default FS.
type osFS struct{}

// OS returns the operating system's file system, the FS a Store uses
// unless WithFS says otherwise.
func OS() FS { return osFS{} }

// OpenFile opens name as os.OpenFile does, never following a symbolic
// link at its last component: a record file, lock, index or artifact
// that is a link is refused as a *fs.PathError wrapping
// *regfile.NotRegularError ("a symbolic link"). A link there would let
// one run's commands append to another run's record, or to any file the
// user can write, and read it back as this run's. It never blocks on,
// and refuses, a named pipe, socket or device left where a record file
// belongs (internal/regfile).
func (osFS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	f, err := regfile.OpenFileOrDir(name, flag|unix.O_NOFOLLOW, perm)
	if errors.Is(err, unix.ELOOP) {
		if info, lerr := os.Lstat(name); lerr == nil && info.Mode()&fs.ModeSymlink != 0 {
			q := shellquote.Quote(name)
			return nil, &fs.PathError{Op: "open", Path: name, Err: fmt.Errorf(
				`%w; a run's files are never opened through a link: put the file itself there (cp --remove-destination "$(readlink -f %s)" %s), or move the run directory aside`,
				&regfile.NotRegularError{Kind: regfile.Kind(info.Mode())}, q, q)}
		}
	}
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}

func (osFS) Mkdir(name string, perm fs.FileMode) error  { return os.Mkdir(name, perm) }
func (osFS) Remove(name string) error                   { return os.Remove(name) }
func (osFS) Rename(oldpath, newpath string) error       { return os.Rename(oldpath, newpath) }
func (osFS) Link(oldname, newname string) error         { return os.Link(oldname, newname) }
func (osFS) Stat(name string) (fs.FileInfo, error)      { return os.Stat(name) }
func (osFS) Lstat(name string) (fs.FileInfo, error)     { return os.Lstat(name) }
func (osFS) ReadDir(name string) ([]fs.DirEntry, error) { return os.ReadDir(name) }

func (osFS) SyncDir(name string) error { return durable.SyncDir(name) }

// osFile is an *os.File with fdatasync and flock. Handoff passes the
// *os.File itself to a child process.
type osFile struct{ *os.File }

// Datasync flushes the file's data to stable storage; see datasync for
// the call each platform makes.
func (f osFile) Datasync() error {
	for {
		err := datasync(int(f.Fd()))
		if err != unix.EINTR {
			if err != nil {
				return &fs.PathError{Op: datasyncOp, Path: f.Name(), Err: err}
			}
			return nil
		}
	}
}

func (f osFile) Lock(exclusive, wait bool) error {
	how := unix.LOCK_SH
	if exclusive {
		how = unix.LOCK_EX
	}
	if !wait {
		how |= unix.LOCK_NB
	}
	return f.flock(how)
}

func (f osFile) Unlock() error { return f.flock(unix.LOCK_UN) }

// flock applies flock(2) operation how, retrying on EINTR.
func (f osFile) flock(how int) error {
	for {
		err := unix.Flock(int(f.Fd()), how)
		if err != unix.EINTR {
			return err
		}
	}
}
