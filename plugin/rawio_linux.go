package plugin

import (
	"io"
	"net"
	"os"
	"syscall"
	"unsafe"
)

// rawIOConn is a plugin socket connection whose reads and writes are
// read(2) and write(2) made as raw system calls on its non-blocking
// descriptor, waiting in the Go runtime's network poller (its
// syscall.RawConn) whenever the call would block, as net.Conn's own do.
// A raw call skips the runtime's bookkeeping of a system call that may
// block, which on a process whose threads were all idle wakes the
// runtime's monitor thread (sysmon) from its deep sleep: a plugin
// answering one call at a time paid that wake-up and the monitor's
// 20 µs ticks until it slept again on every call (docs/decisions.md,
// "Plugin transport"). Neither call can block on a non-blocking socket.
// Deadlines, Close and the addresses are the wrapped connection's.
type rawIOConn struct {
	net.Conn
	rc syscall.RawConn
}

// rawIO returns c as a rawIOConn, or c itself when it has no descriptor
// to read and write (not a socket of the os).
func rawIO(c net.Conn) net.Conn {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return c
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return c
	}
	return &rawIOConn{Conn: c, rc: rc}
}

// Read implements net.Conn: one read(2) once the socket is readable; 0
// bytes read is io.EOF.
func (c *rawIOConn) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	var (
		n     int
		errno syscall.Errno
	)
	err := c.rc.Read(func(fd uintptr) bool {
		for {
			r, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
			switch e {
			case syscall.EINTR:
				continue
			case syscall.EAGAIN:
				return false
			}
			n, errno = int(r), e
			return true
		}
	})
	switch {
	case err != nil:
		return 0, c.opError("read", err)
	case errno != 0:
		return 0, c.opError("read", os.NewSyscallError("read", errno))
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

// Write implements net.Conn: write(2) until all of b is written, waiting
// for the socket to be writable whenever it is full.
func (c *rawIOConn) Write(b []byte) (int, error) {
	var (
		n     int
		errno syscall.Errno
	)
	err := c.rc.Write(func(fd uintptr) bool {
		for n < len(b) {
			r, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&b[n])), uintptr(len(b)-n))
			switch e {
			case 0:
				n += int(r)
			case syscall.EINTR:
			case syscall.EAGAIN:
				return false
			default:
				errno = e
				return true
			}
		}
		return true
	})
	switch {
	case err != nil:
		return n, c.opError("write", err)
	case errno != 0:
		return n, c.opError("write", os.NewSyscallError("write", errno))
	}
	return n, nil
}

// opError is err as net.Conn's own methods report it.
func (c *rawIOConn) opError(op string, err error) error {
	if oe, ok := err.(*net.OpError); ok {
		// The RawConn's own error (a deadline, a closed connection) names
		// its raw operation; it is reported as the read or write it was.
		oe.Op = op
		return oe
	}
	return &net.OpError{Op: op, Net: c.LocalAddr().Network(), Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
}
