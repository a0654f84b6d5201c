package plugin

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/obversa/obversa/internal/regfile"
)

// ErrNotRegular is matched by *NotRegularError.
var ErrNotRegular = errors.New("not a regular file")

// NotRegularError reports a plugin path that names something other than a
// regular file: a device, a named pipe, a socket or a directory. Reading
// one could block forever (a pipe) or never end (/dev/zero), so nothing is
// read from it.
type NotRegularError struct {
	// Path is the path as given.
	Path string
	// Kind says what it is: "a character device", "a named pipe", ...
	Kind string
}

// Error names the path and what it is.
func (e *NotRegularError) Error() string {
	return fmt.Sprintf("%s is %s, not a regular file; a plugin path must name the plugin binary", e.Path, e.Kind)
}

// Is reports whether target is ErrNotRegular.
func (e *NotRegularError) Is(target error) bool { return target == ErrNotRegular }

// CheckBinaryFile reports whether path (symbolic links followed) names a
// regular file, without opening it: nil if it does, a *NotRegularError
// (ErrNotRegular) naming what it is otherwise, or the *fs.PathError of
// stat (fs.ErrNotExist for a missing file). `obversa validate` uses it for
// plugin paths; every reader of a binary in this package applies the same
// check to the file it opened.
func CheckBinaryFile(path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return &NotRegularError{Path: path, Kind: regfile.Kind(st.Mode())}
	}
	return nil
}

// openRegular opens path for reading only if it is a regular file. The
// mode is checked before opening (a device is never opened) and again on
// the opened file, which was opened without blocking, so a path swapped
// for a named pipe in between cannot hang the caller.
func openRegular(path string) (*os.File, error) {
	if err := CheckBinaryFile(path); err != nil {
		return nil, err
	}
	f, err := regfile.OpenNonblocking(path)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, &NotRegularError{Path: path, Kind: regfile.Kind(st.Mode())}
	}
	return f, nil
}

// FileSHA256 returns the SHA-256 of the file at path as lower-case hex. It
// returns a *NotRegularError for anything but a regular file, or the error
// from opening or reading it (an *fs.PathError for os errors).
func FileSHA256(path string) (string, error) {
	f, err := openRegular(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("hashing %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
