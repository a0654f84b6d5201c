package watchdog

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"

	"github.com/obversa/obversa/internal/pathtree"
	"github.com/obversa/obversa/store"
)

// StorageAdvice says what to do about err, a failure to write under the
// storage directory that chosen (for example "`storage.directory` in
// run.hcl", or "--storage") named: free space on a full file system
// (store.ErrStorageFull, ENOSPC, EDQUOT), pick a writable directory for a read-only one (EROFS)
// or fix the permissions (EACCES, EPERM); "check <chosen>" for anything
// else.
func StorageAdvice(err error, chosen string) string {
	switch {
	case errors.Is(err, store.ErrStorageFull), errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		return "the storage directory's file system is full: free space there, or point " + chosen + " at another file system"
	case errors.Is(err, syscall.EROFS):
		return "the storage directory is on a read-only file system: point " + chosen + " at a writable directory"
	case errors.Is(err, fs.ErrPermission):
		return "the storage directory is not writable by this user: fix its permissions, or point " + chosen + " at a writable directory"
	}
	return "check " + chosen
}

// recordAdvice says what to do about err, a failure to open the stored
// run ref names for writing: for a record on a read-only file system
// (EROFS), remount it read-write or carry on a copy in a writable storage
// directory; for one this user may not write (EACCES, EPERM), run as its
// owner or grant write permission on the run directory and its files; a
// record the store opened read-only for want of that permission
// (store.ErrReadOnly from Lock) is the same.
// The path is the file the error names, else the run. Anything else, ""
// (the error says what it is).
func recordAdvice(err error, ref Ref) string {
	path := ref.String()
	var pe *fs.PathError
	if errors.As(err, &pe) {
		path = pe.Path
	}
	switch {
	case errors.Is(err, syscall.EROFS):
		return fmt.Sprintf("the record %s is on a read-only file system, so the run cannot be written there: remount that file system read-write, or copy the run directory %s into a writable storage directory and name the copy, then run the command again", path, ref.Shell())
	case errors.Is(err, fs.ErrPermission), errors.Is(err, store.ErrReadOnly):
		return fmt.Sprintf("the record %s is not writable by this user: run the command as the user who owns the record, or give this user write permission on the run directory %s and the files in it (for its owner: chmod -R u+w %s), then run the command again", path, ref.Shell(), ref.Shell())
	}
	return ""
}

// lockRefusal is the error of a command that writes a stored run when
// taking the run's lock failed with err: a record the store could only
// open read-only (no write permission, store.ErrReadOnly) refuses as
// openRun does, RUN_STORAGE with nothing recorded and recordAdvice; any
// other error is returned as it is.
func lockRefusal(err error, ref Ref) error {
	if !errors.Is(err, store.ErrReadOnly) {
		return err
	}
	return &notRecordedError{err: fmt.Errorf("RUN_STORAGE: %w", err), advice: recordAdvice(err, ref)}
}

// underStorage returns the *fs.PathError or *os.LinkError in err that
// names a file under dir (dir itself included) other than the plugin
// binary src, or nil: the storage directory's fault, not the binary's.
func underStorage(err error, dir, src string) error {
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Path != src && pathtree.Within(dir, pe.Path) {
		return pe
	}
	var le *os.LinkError
	if errors.As(err, &le) && pathtree.Within(dir, le.New) {
		return le
	}
	return nil
}
