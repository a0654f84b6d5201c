//go:build unix

package command

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// maxBufferedRead bounds readBuffered: more than the largest pipe buffer
// Linux allows by default (/proc/sys/fs/pipe-max-size, 1 MiB), so a
// writer that keeps filling the pipe cannot keep Run reading.
const maxBufferedRead = 2 << 20

// readBuffered hands fn what pipe f holds now, in chunks of buf's size,
// without waiting for more (the parent's end of an os.Pipe is
// non-blocking), and reports whether it reached the end of the pipe: no
// writer is left.
func readBuffered(f *os.File, buf []byte, fn func([]byte)) (ended bool) {
	sc, err := f.SyscallConn()
	if err != nil {
		return false
	}
	_ = sc.Control(func(fd uintptr) {
		for total := 0; total < maxBufferedRead; {
			n, err := unix.Read(int(fd), buf)
			switch {
			case n > 0:
				fn(buf[:n])
				total += n
			case err == nil:
				ended = true // n == 0: end of the pipe
				return
			case errors.Is(err, unix.EINTR):
			default:
				return // EAGAIN: a writer is left, the pipe is empty
			}
		}
	})
	return ended
}
