package command

import (
	"os"

	"golang.org/x/sys/unix"
)

// growPipe grows the pipe behind f to n bytes, so that a writer of n bytes
// can exit before its reader has taken any of them. Errors are ignored:
// the pipe keeps its size.
func growPipe(f *os.File, n int) {
	_, _ = unix.FcntlInt(f.Fd(), unix.F_SETPIPE_SZ, n)
}
