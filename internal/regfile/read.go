package regfile

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// ErrTooLarge is returned (wrapped) by Read for a file past its bound.
var ErrTooLarge = fmt.Errorf("file too large")

// NotRegularError is returned by Read for anything but a regular file:
// Kind names what it is ("a named pipe", "a directory", …).
type NotRegularError struct{ Kind string }

// Error says what the file is: "it is a named pipe, not a file".
func (e *NotRegularError) Error() string { return fmt.Sprintf("it is %s, not a file", e.Kind) }

// Read reads a regular file of at most max bytes. The path is examined
// before it is opened, opened without blocking, and the opened file
// examined again (it may have been replaced in between). Errors: the
// os errors of stat, open and read (*fs.PathError); *NotRegularError;
// ErrTooLarge (wrapped, with the size) past max.
func Read(path string, max int64) ([]byte, error) {
	f, err := openRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if info.Size() > max {
		return nil, fmt.Errorf("%w: %d bytes is more than the limit of %d bytes", ErrTooLarge, info.Size(), max)
	}
	// Sized to the file as it stands (it may still grow, up to the
	// bound): one allocation and one read for a file that does not,
	// where io.ReadAll would grow and copy its buffer a dozen times for
	// a file of megabytes. Made at that size with bytes.MinRead to spare,
	// the buffer never grows, so it is never cleared before the read
	// fills it (a 7 MB fold snapshot, read by every status of a large
	// run; docs/decisions.md, "A status of a large run is paid in pages
	// it touches").
	buf := bytes.NewBuffer(make([]byte, 0, info.Size()+bytes.MinRead))
	_, err = buf.ReadFrom(io.LimitReader(f, max+1))
	b := buf.Bytes()
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%w: more than the limit of %d bytes", ErrTooLarge, max)
	}
	return b, nil
}

// Kind names what a file of mode m is, for messages: "a directory", "a
// named pipe", "a socket", "a character device", "a block device", "a
// symbolic link" (for a mode read with Lstat), or "an irregular file".
func Kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	default:
		return "an irregular file"
	}
}

// openRegular opens path for reading if it is a regular file: examined
// before it is opened, opened without blocking, and the opened file
// examined again (it may have been replaced in between). Errors: the os
// errors of stat and open (*fs.PathError); *NotRegularError.
func openRegular(path string) (*os.File, error) {
	if info, err := os.Stat(path); err != nil {
		return nil, err
	} else if !info.Mode().IsRegular() {
		return nil, &NotRegularError{Kind: Kind(info.Mode())}
	}
	f, err := OpenNonblocking(path)
	if err != nil {
		return nil, err
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !info.Mode().IsRegular() {
		f.Close()
		return nil, &NotRegularError{Kind: Kind(info.Mode())}
	}
	return f, nil
}
