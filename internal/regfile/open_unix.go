//go:build unix

package regfile

import (
	"os"
	"syscall"
)

// OpenNonblocking opens path for reading without blocking: opening a
// named pipe with no writer returns at once instead of waiting for one.
func OpenNonblocking(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}
