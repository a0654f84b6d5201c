package watchdog

import (
	"io"
	"sync"
)

// limitWriter passes writes through until limit bytes were written, then
// drops the rest and closes over once.
type limitWriter struct {
	mu    sync.Mutex
	w     io.Writer
	n     int64
	limit int64
	over  chan struct{}
	shut  bool
}

// Write implements io.Writer; it never fails, so a flooding worker is
// stopped by the watchdog rather than by a broken pipe.
func (l *limitWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.n+int64(len(p)) > l.limit {
		if !l.shut {
			l.shut = true
			close(l.over)
		}
		l.n += int64(len(p))
		return len(p), nil
	}
	l.n += int64(len(p))
	_, _ = l.w.Write(p)
	return len(p), nil
}
