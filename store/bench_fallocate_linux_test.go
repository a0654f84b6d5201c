package store

import (
	"os"

	"golang.org/x/sys/unix"
)

// fallocate reserves size bytes of f from offset 0 with fallocate(2):
// mode 0 (the size becomes size), or FALLOC_FL_KEEP_SIZE.
func fallocate(f *os.File, keepSize bool, size int64) error {
	mode := uint32(0)
	if keepSize {
		mode = unix.FALLOC_FL_KEEP_SIZE
	}
	return unix.Fallocate(int(f.Fd()), mode, 0, size)
}
