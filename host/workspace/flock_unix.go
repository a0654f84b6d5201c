//go:build unix

package workspace

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"

	"github.com/obversa/obversa/internal/regfile"
)

// openLeaseFile opens (creating) the lease file without following a
// symlink planted in its place.
func openLeaseFile(path string) (*os.File, error) {
	return regfile.OpenFile(path, os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW, 0o644)
}

// lockExclusiveNB takes flock(LOCK_EX|LOCK_NB) on f, retrying on EINTR.
func lockExclusiveNB(f *os.File) error { return flock(f, unix.LOCK_EX|unix.LOCK_NB) }

// unlock drops f's flock.
func unlock(f *os.File) error { return flock(f, unix.LOCK_UN) }

func flock(f *os.File, how int) error {
	for {
		err := unix.Flock(int(f.Fd()), how)
		if err != unix.EINTR {
			return err
		}
	}
}

// isHeld reports whether err is flock's answer for a lock held elsewhere.
func isHeld(err error) bool { return errors.Is(err, unix.EWOULDBLOCK) }
