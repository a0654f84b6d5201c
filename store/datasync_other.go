//go:build unix && !linux

package store

import "golang.org/x/sys/unix"

// datasyncOp names the call datasync makes, for its errors.
const datasyncOp = "fsync"

// datasync is fsync(2) where the system has no fdatasync(2) (macOS, the
// BSDs): it flushes more than needed, never less.
func datasync(fd int) error { return unix.Fsync(fd) }
