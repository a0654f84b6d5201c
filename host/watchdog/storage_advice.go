package watchdog

import (
	"errors"
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
