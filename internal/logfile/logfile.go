package logfile

import (
	"bytes"
	"fmt"
	"os"
	"sync"

	"github.com/obversa/obversa/internal/regfile"
	"github.com/obversa/obversa/store"
)

// DefaultMaxBytes is the cap of one log file when Options.MaxBytes is 0:
// 8 MiB (so at most 16 MiB per log with its rotated predecessor).
const DefaultMaxBytes = 8 << 20

// maxPending bounds the bytes of an unfinished line held in memory before
// they are written anyway (redacted as far as is safe).
const maxPending = 64 << 10

// Options configures Open.
type Options struct {
	// MaxBytes caps the file; 0 = DefaultMaxBytes.
	MaxBytes int64
	// Secrets are the known secret values to redact; nil redacts nothing.
	Secrets []string
}

// Writer is a capped, redacting log file. It is safe for concurrent use.
type Writer struct {
	mu      sync.Mutex
	path    string
	f       *os.File
	size    int64
	max     int64
	red     *store.Redactor
	pending []byte
	err     error
}

// Open opens (creating, mode 0644) the log at path for appending. It
// returns the error of opening or stating the file.
func Open(path string, o Options) (*Writer, error) {
	f, err := regfile.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	max := o.MaxBytes
	if max <= 0 {
		max = DefaultMaxBytes
	}
	return &Writer{path: path, f: f, size: st.Size(), max: max, red: store.NewRedactor(o.Secrets)}, nil
}

// Write takes p whole: complete lines are redacted and written at once,
// the rest of a line waits for its newline (or for maxPending bytes). It
// returns the first error met writing or rotating the file, after which
// nothing more is written.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return 0, w.err
	}
	w.pending = append(w.pending, p...)
	if i := bytes.LastIndexByte(w.pending, '\n'); i >= 0 {
		w.emit(w.red.Redact(w.pending[:i+1]))
		w.pending = append(w.pending[:0], w.pending[i+1:]...)
	}
	if len(w.pending) > maxPending {
		out, n := w.red.RedactStream(w.pending)
		w.emit(out)
		w.pending = append(w.pending[:0], w.pending[n:]...)
	}
	if w.err != nil {
		return 0, w.err
	}
	return len(p), nil
}

// emit writes redacted text, line by line, rotating before a line that
// would take the file past the cap.
func (w *Writer) emit(text []byte) {
	for len(text) > 0 && w.err == nil {
		line := text
		if i := bytes.IndexByte(text, '\n'); i >= 0 {
			line = text[:i+1]
		}
		text = text[len(line):]
		if int64(len(line)) > w.max {
			cut := fmt.Appendf(nil, " [cut: %d bytes more]\n", int64(len(bytes.TrimSuffix(line, []byte("\n"))))-w.max/2)
			line = append(append([]byte(nil), line[:w.max/2]...), cut...)
		}
		if w.size > 0 && w.size+int64(len(line)) > w.max {
			w.rotate()
		}
		if w.err == nil {
			n, err := w.f.Write(line)
			w.size += int64(n)
			w.err = err
		}
	}
}

// rotate moves the file to <path>.1 and starts a new one.
func (w *Writer) rotate() {
	if err := w.f.Close(); err != nil {
		w.err = err
		return
	}
	if err := os.Rename(w.path, w.path+".1"); err != nil {
		w.err = err
		return
	}
	f, err := regfile.OpenFile(w.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND|os.O_TRUNC, 0o644)
	if err != nil {
		w.err = err
		return
	}
	w.f, w.size = f, 0
}

// Close writes what is pending (redacted) and closes the file.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.pending) > 0 && w.err == nil {
		w.emit(w.red.Redact(w.pending))
		w.pending = nil
	}
	cerr := w.f.Close()
	if w.err != nil {
		return w.err
	}
	return cerr
}
