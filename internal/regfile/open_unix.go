//go:build unix

package regfile

import (
	"io/fs"
	"os"
	"syscall"
)

// OpenNonblocking opens path for reading without blocking: opening a
// named pipe with no writer returns at once instead of waiting for one.
func OpenNonblocking(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}

// openNonblocking is os.OpenFile with O_NONBLOCK added, so that opening
// a named pipe returns at once (write-only: with ENXIO) whoever is at its
// other end.
func openNonblocking(path string, flag int, perm fs.FileMode) (*os.File, error) {
	return os.OpenFile(path, flag|syscall.O_NONBLOCK, perm)
}

// clearNonblock puts a regular file or directory back in blocking mode
// (O_NONBLOCK means nothing to them, but the descriptor may be handed to
// a child process, which should find it as a plain open would leave it).
func clearNonblock(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = syscall.SetNonblock(int(fd), false) }); err != nil {
		return err
	}
	return serr
}
