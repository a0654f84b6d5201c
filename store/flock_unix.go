//go:build unix

package store

import (
	"os"

	"golang.org/x/sys/unix"
)

// flock applies flock(2) operation how to f, retrying on EINTR.
func flock(f *os.File, how int) error {
	for {
		err := unix.Flock(int(f.Fd()), how)
		if err != unix.EINTR {
			return err
		}
	}
}

const (
	lockShared    = unix.LOCK_SH
	lockExclusive = unix.LOCK_EX
	lockUnlock    = unix.LOCK_UN
	lockNonBlock  = unix.LOCK_NB
)

// isWouldBlock reports whether err is flock's "held elsewhere" answer.
func isWouldBlock(err error) bool { return err == unix.EWOULDBLOCK }
