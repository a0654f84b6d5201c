//go:build unix

package plugin

import (
	"os"
	"syscall"
)

// openNonblocking opens path read-only without blocking on a named pipe
// that has no writer.
func openNonblocking(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}
