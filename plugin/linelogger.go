package plugin

import (
	"bytes"
	"sync"

	"github.com/hashicorp/go-hclog"
)

// maxLineBytes bounds a logged line of stray plugin output; the rest of a
// longer line is counted, not kept.
const maxLineBytes = 16 << 10

// lineLogger is an io.Writer that logs each line written to it, for the
// plugin's stray stdout and stderr after the handshake. A line longer than
// maxLineBytes is logged once, cut, with "truncated" = true and its full
// length in "line_bytes"; a last line without a newline is logged by
// Flush. Memory stays bounded by maxLineBytes whatever the plugin writes.
type lineLogger struct {
	mu     sync.Mutex
	logger hclog.Logger
	stream string
	// level and msg are what each line is logged with.
	level hclog.Level
	msg   string
	buf   []byte
	// over counts the bytes of the current line beyond buf (cut).
	over int64
}

func newLineLogger(logger hclog.Logger, stream string) *lineLogger {
	return &lineLogger{logger: logger, stream: stream, level: hclog.Info, msg: "plugin output"}
}

// StdoutAfterHandshake is the message the host logs, at warning level with
// the line in "line", for each line a plugin writes to its real standard
// output after the handshake line: that stream carries the handshake line
// alone (docs/writing-plugins.md, "Stdio"), so such a line is a fault of
// the plugin. Output a Go plugin writes to os.Stdout travels over
// go-plugin's stdio service instead and is logged as "plugin output".
const StdoutAfterHandshake = "plugin wrote to stdout after its handshake (stdout carries the handshake line alone; log to stderr)"

// newStrayStdoutLogger logs the lines of a plugin's real stdout after its
// handshake, as warnings.
func newStrayStdoutLogger(logger hclog.Logger) *lineLogger {
	return &lineLogger{logger: logger, stream: "stdout", level: hclog.Warn, msg: StdoutAfterHandshake}
}

// Write implements io.Writer; it never fails.
func (w *lineLogger) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk = p[:i]
		}
		room := maxLineBytes - len(w.buf)
		if len(chunk) <= room {
			w.buf = append(w.buf, chunk...)
		} else {
			w.buf = append(w.buf, chunk[:room]...)
			w.over += int64(len(chunk) - room)
		}
		if i < 0 {
			break
		}
		w.emit()
		p = p[i+1:]
	}
	return n, nil
}

// Flush logs a pending line that has no newline yet.
func (w *lineLogger) Flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.buf) > 0 || w.over > 0 {
		w.emit()
	}
}

func (w *lineLogger) emit() {
	line := string(bytes.TrimRight(w.buf, "\r"))
	if w.over > 0 {
		w.logger.Log(w.level, w.msg, "stream", w.stream, "line", line,
			"truncated", true, "line_bytes", int64(len(w.buf))+w.over)
	} else {
		w.logger.Log(w.level, w.msg, "stream", w.stream, "line", line)
	}
	w.buf, w.over = w.buf[:0], 0
}
