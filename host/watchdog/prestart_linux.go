package watchdog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
)

// handoffSocket returns the two ends of a blocking Unix stream socket,
// each close-on-exec: the watchdog's, and the one Prestart makes a
// worker's stdin.
func handoffSocket() (mine, theirs *os.File, err error) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, err
	}
	return os.NewFile(uintptr(fds[0]), "worker-handoff"), os.NewFile(uintptr(fds[1]), "worker-stdin"), nil
}

// sendWithFiles writes msg to the socket f with files' descriptors
// attached to its first byte.
func sendWithFiles(f *os.File, msg []byte, files []*os.File) error {
	fds := make([]int, len(files))
	for i, file := range files {
		fds[i] = int(file.Fd())
	}
	// The socket is blocking (Prestart made it so): SendmsgN returns
	// once the message is in the socket's buffer, or part of it.
	n, err := syscall.SendmsgN(int(f.Fd()), msg, syscall.UnixRights(fds...), nil, syscall.MSG_NOSIGNAL)
	if err != nil {
		return err
	}
	_, err = f.Write(msg[n:])
	return err
}

// maxHandoff bounds the hand-over line a first worker reads.
const maxHandoff = 16 << 20

// receiveHandoff is receiveEnv for a first worker started early
// (HandoffEnv): it reads the hand-over line from its stdin, a Unix socket,
// with the descriptors sent on it (received close-on-exec, so no process
// the worker starts inherits them), sets the variables, each descriptor's
// variable naming the descriptor as received (placeFiles), and returns
// the rest of the stream. Errors are receiveEnv's.
func receiveHandoff(stdin *os.File) (io.Reader, error) {
	var line []byte
	var received []int
	buf := make([]byte, 64<<10)
	oob := make([]byte, syscall.CmsgSpace(8*4))
	for !bytes.Contains(line, []byte{'\n'}) {
		n, oobn, _, _, err := syscall.Recvmsg(int(stdin.Fd()), buf, oob, syscall.MSG_CMSG_CLOEXEC)
		if err == nil && n == 0 {
			err = io.EOF
		}
		if err == nil && len(line)+n > maxHandoff {
			err = errors.New("the hand-over line is too long")
		}
		if err != nil {
			closeAll(received)
			return stdin, fmt.Errorf("%w (stdin ended before the hand-over from the watchdog: %v)", ErrNotFromWatchdog, err)
		}
		line = append(line, buf[:n]...)
		received = append(received, unixRights(oob[:oobn])...)
	}
	first, rest, _ := bytes.Cut(line, []byte{'\n'})
	var vars map[string]string
	err := json.Unmarshal(first, &vars)
	if err != nil {
		err = fmt.Errorf("%w (the hand-over line on stdin is not a JSON object: %v)", ErrNotFromWatchdog, err)
	}
	if err == nil {
		err = placeFiles(vars, received)
	}
	if err != nil {
		closeAll(received)
		return stdin, err
	}
	for k, v := range vars {
		if err := os.Setenv(k, v); err != nil {
			return stdin, fmt.Errorf("setting %s: %w", k, err)
		}
	}
	return io.MultiReader(bytes.NewReader(rest), stdin), nil
}

// unixRights returns the descriptors the control messages in oob carry.
func unixRights(oob []byte) []int {
	msgs, err := syscall.ParseSocketControlMessage(oob)
	if err != nil {
		return nil
	}
	var fds []int
	for _, m := range msgs {
		if got, err := syscall.ParseUnixRights(&m); err == nil {
			fds = append(fds, got...)
		}
	}
	return fds
}

// closeAll closes each descriptor of fds.
func closeAll(fds []int) {
	for _, fd := range fds {
		_ = syscall.Close(fd)
	}
}
