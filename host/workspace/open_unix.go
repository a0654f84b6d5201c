//go:build unix

package workspace

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// openNoFollow opens path read-only, refusing a symlink in the last
// component and never blocking on a FIFO.
func openNoFollow(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
}

// isSymlinkRefused reports whether err is O_NOFOLLOW's answer for a
// symlink (ELOOP; EMLINK on the BSDs).
func isSymlinkRefused(err error) bool {
	return errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EMLINK)
}
