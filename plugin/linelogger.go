package plugin

import (
	"bytes"
	"sync"

	"github.com/hashicorp/go-hclog"
)

// maxLineBytes bounds a buffered line of stray plugin output; longer lines
// are logged in pieces.
const maxLineBytes = 64 << 10

// lineLogger is an io.Writer that logs each complete line written to it,
// for the plugin's stray stdout and stderr after the handshake.
type lineLogger struct {
	mu     sync.Mutex
	logger hclog.Logger
	stream string
	buf    []byte
}

func newLineLogger(logger hclog.Logger, stream string) *lineLogger {
	return &lineLogger{logger: logger, stream: stream}
}

// Write implements io.Writer; it never fails.
func (w *lineLogger) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		w.log(w.buf[:i])
		w.buf = w.buf[i+1:]
	}
	if len(w.buf) >= maxLineBytes {
		w.log(w.buf)
		w.buf = nil
	}
	if len(w.buf) == 0 {
		w.buf = nil
	}
	return len(p), nil
}

func (w *lineLogger) log(line []byte) {
	w.logger.Info("plugin output", "stream", w.stream, "line", string(bytes.TrimRight(line, "\r")))
}
