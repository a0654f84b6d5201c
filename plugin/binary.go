package plugin

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
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

// fileKind names the kind of a non-regular file mode in words.
func fileKind(m fs.FileMode) string {
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
		return &NotRegularError{Path: path, Kind: fileKind(st.Mode())}
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
	f, err := openNonblocking(path)
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
		return nil, &NotRegularError{Path: path, Kind: fileKind(st.Mode())}
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

// CopyOptions configures CopyBinary.
type CopyOptions struct {
	// Expected is the pinned SHA-256 (64 lower-case hex digits); empty
	// accepts whatever digest the bytes have (trust on first use).
	Expected string
	// Keys, when not empty, make a valid minisign signature mandatory: the
	// file SignaturePath must be signed by one of them, and its statement
	// must name the bytes' SHA-256 and this machine's platform.
	Keys []PublicKey
	// SignaturePath is the signature file; empty = source + SignatureSuffix.
	SignaturePath string
	// GOOS and GOARCH are the platform a signed statement must name; empty
	// = this machine's (runtime.GOOS, runtime.GOARCH).
	GOOS, GOARCH string
}

// Copied is a binary CopyBinary read, hashed and, when a directory was
// given, placed in a content-addressed directory.
type Copied struct {
	// Path is dir/<SHA256>, the only file that may be executed for these
	// bytes; empty when CopyBinary was given no directory.
	Path string
	// SHA256 is the digest of the bytes read (lower-case hex).
	SHA256 string
	// Verified is what the signature proved; nil when no key was given.
	Verified *Verified
	// Reused is true when dir already held these bytes under that name.
	Reused bool
}

// CopyBinary reads the plugin binary at src exactly once and, while
// reading, hashes it, verifies its signature (when o.Keys is set) and
// copies it into dir, so that the bytes checked and the bytes that will run
// are one and the same (docs/plugins.md): the source path is never executed, and
// swapping the source during or after the check changes nothing. The copy
// is written to a temporary file, synced, made read-only (0555) and renamed
// to dir/<sha256> only when its digest equals o.Expected (when given) and
// its signature verified. When dir already holds an entry named
// o.Expected (a repeated run), nothing is written: the source is compared
// with the entry byte for byte while it is hashed, and equal bytes reuse
// the entry; an entry with other bytes (tampered) is refused with an error
// wrapping ErrCacheChanged. An empty dir hashes and verifies without
// copying.
//
// Errors, each naming the plugin (name) and the path: a *NotRegularError
// for a device, named pipe, socket or directory (never read); fs errors
// (fs.ErrNotExist for a missing file); *DigestMismatchError when the bytes
// are not the pinned ones (checked before the signature, so a swapped
// binary is reported by both digests); *UntrustedError for a signature that
// is missing or invalid, or whose statement names another platform
// (ReasonPlatform); ErrCacheChanged; I/O errors writing dir.
func CopyBinary(name, src, dir string, o CopyOptions) (*Copied, error) {
	// A signature that cannot be used is reported after the digest, so
	// that a swapped binary reads as a digest mismatch.
	var (
		ts     *trustedSignature
		sigErr error
	)
	if len(o.Keys) > 0 {
		sigPath := o.SignaturePath
		if sigPath == "" {
			sigPath = src + SignatureSuffix
		}
		ts, sigErr = loadSignature(src, sigPath, o.Keys)
	}
	in, err := openRegular(src)
	if err != nil {
		return nil, fmt.Errorf("plugin %q: %w", name, err)
	}
	defer in.Close()
	var (
		out  io.Writer = io.Discard
		tmp  *os.File
		same *sameWriter
	)
	if dir != "" {
		if o.Expected != "" {
			// An entry for the pinned digest exists (a repeated run): compare
			// with it while hashing instead of writing a copy.
			if entry, err := openRegular(filepath.Join(dir, o.Expected)); err == nil {
				defer entry.Close()
				same = &sameWriter{r: entry}
				out = same
			}
		}
		if same == nil {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return nil, err
			}
			if tmp, err = os.CreateTemp(dir, ".tmp-*"); err != nil {
				return nil, err
			}
			defer os.Remove(tmp.Name())
			defer tmp.Close()
			out = tmp
		}
	}
	tee := io.TeeReader(in, out)
	c := &Copied{}
	verified := true
	if ts != nil {
		c.SHA256, verified, err = ts.sig.Verify(tee, ts.key)
	} else {
		h := sha256.New()
		_, err = io.Copy(h, tee)
		c.SHA256 = hex.EncodeToString(h.Sum(nil))
	}
	if err != nil {
		return nil, fmt.Errorf("plugin %q: reading %s: %w", name, src, err)
	}
	if o.Expected != "" && c.SHA256 != o.Expected {
		return nil, &DigestMismatchError{Name: name, Path: src, Expected: o.Expected, Actual: c.SHA256}
	}
	if sigErr != nil {
		return nil, fmt.Errorf("plugin %q: %w", name, sigErr)
	}
	if ts != nil {
		if c.Verified, err = ts.result(c.SHA256, verified); err != nil {
			return nil, fmt.Errorf("plugin %q: %w", name, err)
		}
		if err := checkPlatform(ts, c.Verified.Statement, o); err != nil {
			return nil, fmt.Errorf("plugin %q: %w", name, err)
		}
	}
	switch {
	case same != nil:
		c.Path, c.Reused = filepath.Join(dir, c.SHA256), true
		if !same.equal() {
			got, _ := FileSHA256(c.Path)
			return nil, fmt.Errorf("plugin %q: %w: cached binary %s has sha256 %s, not the %s its name pins", name, ErrCacheChanged, c.Path, or(got, "unreadable"), c.SHA256)
		}
	case tmp != nil:
		c.Path = filepath.Join(dir, c.SHA256)
		if err := place(tmp, c); err != nil {
			return nil, fmt.Errorf("plugin %q: %w", name, err)
		}
	}
	return c, nil
}

// sameWriter compares what is written to it with the bytes of r.
type sameWriter struct {
	r    io.Reader
	buf  []byte
	diff bool
}

func (w *sameWriter) Write(p []byte) (int, error) {
	if !w.diff {
		if cap(w.buf) < len(p) {
			w.buf = make([]byte, len(p))
		}
		b := w.buf[:len(p)]
		if _, err := io.ReadFull(w.r, b); err != nil || !bytes.Equal(b, p) {
			w.diff = true
		}
	}
	return len(p), nil
}

// equal reports whether everything written equals all of r.
func (w *sameWriter) equal() bool {
	if w.diff {
		return false
	}
	var one [1]byte
	n, _ := w.r.Read(one[:])
	return n == 0
}

// checkPlatform refuses a signed statement for another machine than the
// one that will run the binary.
func checkPlatform(ts *trustedSignature, st Statement, o CopyOptions) error {
	goos, goarch := o.GOOS, o.GOARCH
	if goos == "" {
		goos = runtime.GOOS
	}
	if goarch == "" {
		goarch = runtime.GOARCH
	}
	if st.OS != goos || st.Arch != goarch {
		return ts.untrusted(ReasonPlatform, nil, "signature %s is for %s %s on %s, but this machine is %s/%s; use the build signed for this platform",
			ts.sigPath, st.Name, st.Version, st.Platform(), goos, goarch)
	}
	return nil
}

// ErrCacheChanged is returned by CopyBinary when the content-addressed
// entry of the right name already exists with other bytes: someone changed
// a cached binary (code PLUGIN_CHANGED where the host reports it).
var ErrCacheChanged = errors.New("PLUGIN_CHANGED")

// place moves the verified temporary copy to c.Path, synced, or reuses an
// identical existing entry.
func place(tmp *os.File, c *Copied) error {
	if _, err := os.Lstat(c.Path); err == nil {
		same, err := sameBytes(tmp, c.Path)
		if err != nil {
			return err
		}
		if !same {
			got, _ := FileSHA256(c.Path)
			return fmt.Errorf("%w: cached binary %s has sha256 %s, not the %s its name pins", ErrCacheChanged, c.Path, or(got, "unreadable"), c.SHA256)
		}
		c.Reused = true
		return nil
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Chmod(0o555); err != nil {
		return err
	}
	// Closed before it is renamed into place and executed.
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), c.Path); err != nil {
		return err
	}
	return syncDir(filepath.Dir(c.Path))
}

func or(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}

// sameBytes compares the whole of f (from its start) with the file at
// path.
func sameBytes(f *os.File, path string) (bool, error) {
	g, err := openRegular(path)
	if err != nil {
		return false, nil
	}
	defer g.Close()
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return false, err
	}
	a, b := make([]byte, 64<<10), make([]byte, 64<<10)
	for {
		n, errA := io.ReadFull(f, a)
		m, errB := io.ReadFull(g, b)
		if n != m || !bytes.Equal(a[:n], b[:m]) {
			return false, nil
		}
		if errA == io.EOF || errA == io.ErrUnexpectedEOF {
			return errB == io.EOF || errB == io.ErrUnexpectedEOF, nil
		}
		if errA != nil {
			return false, errA
		}
		if errB != nil {
			return false, nil
		}
	}
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
