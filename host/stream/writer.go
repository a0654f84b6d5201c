package stream

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/obversa/obversa/internal/regfile"
	"github.com/obversa/obversa/plugin"
	"github.com/obversa/obversa/store"
)

// DefaultMaxBytes caps a run's stream (both segments together) when
// Options.MaxBytes is 0: 64 MiB.
const DefaultMaxBytes = 64 << 20

// FlushInterval is how often the writer's buffer reaches the file: how far
// behind a reader of a live run can be.
const FlushInterval = 100 * time.Millisecond

// bufSize is the writer's buffer: a flush per 64 KiB at most.
const bufSize = 64 << 10

// Options configures Open.
type Options struct {
	// MaxBytes caps the stream, both segments together; 0 =
	// DefaultMaxBytes. Each segment holds at most half of it.
	MaxBytes int64
	// Secrets are the known secret values to redact; nil redacts nothing.
	Secrets []string
}

// Writer appends engine calls' streamed events to a run's stream.jsonl.
// It is safe for concurrent use by the attempts of one worker; one worker
// writes a run's stream at a time (the run's single writer). A write that
// fails stops the writing, never the attempt: Close returns the error.
type Writer struct {
	dir  string
	half int64
	red  *store.Redactor
	hold bool // there are secrets to redact

	mu   sync.Mutex
	f    *os.File
	buf  *bufio.Writer
	size int64 // bytes of the current segment, buffered ones included
	// Bytes per position in the current and the previous segment;
	// unknown counts bytes an earlier worker wrote.
	cur, old               map[string]int64
	curUnknown, oldUnknown int64
	err                    error

	stop    chan struct{}
	stopped chan struct{}
}

// Open opens the stream of the run in dir for appending (creating
// stream.jsonl, mode 0600: it holds what agents wrote). Errors: opening or
// stating the file.
func Open(dir string, o Options) (*Writer, error) {
	max := o.MaxBytes
	if max <= 0 {
		max = DefaultMaxBytes
	}
	red := store.NewRedactor(o.Secrets)
	w := &Writer{dir: dir, half: max / 2, red: red, hold: red.Longest() > 0,
		cur: map[string]int64{}, old: map[string]int64{}, stop: make(chan struct{}), stopped: make(chan struct{})}
	if err := w.openSegment(); err != nil {
		return nil, err
	}
	// What earlier workers wrote is counted, not attributed.
	w.curUnknown = w.size
	if st, err := os.Stat(filepath.Join(dir, OldFileName)); err == nil {
		w.oldUnknown = st.Size()
	}
	if w.size > 0 {
		// A worker that died may have left half a line: end it, so the
		// next line parses.
		if last, err := lastByte(w.f, w.size); err == nil && last != '\n' {
			w.put([]byte("\n"), "")
		}
	}
	go w.flusher()
	return w, nil
}

func (w *Writer) openSegment() error {
	f, err := regfile.OpenFile(filepath.Join(w.dir, FileName), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	w.f, w.size = f, st.Size()
	if w.buf == nil {
		w.buf = bufio.NewWriterSize(f, bufSize)
	} else {
		w.buf.Reset(f)
	}
	return nil
}

func lastByte(f *os.File, size int64) (byte, error) {
	r, err := regfile.OpenFile(f.Name(), os.O_RDONLY, 0)
	if err != nil {
		return 0, err
	}
	defer r.Close()
	b := make([]byte, 1)
	if _, err := r.ReadAt(b, size-1); err != nil && err != io.EOF {
		return 0, err
	}
	return b[0], nil
}

// flusher writes the buffer out every FlushInterval until Close.
func (w *Writer) flusher() {
	defer close(w.stopped)
	t := time.NewTicker(FlushInterval)
	defer t.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-t.C:
			w.mu.Lock()
			if w.err == nil && w.buf.Buffered() > 0 {
				w.err = w.buf.Flush()
			}
			w.mu.Unlock()
		}
	}
}

// Close flushes and closes the file; it returns the first error met
// writing, rotating or closing.
func (w *Writer) Close() error {
	if w == nil {
		return nil
	}
	close(w.stop)
	<-w.stopped
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		w.err = w.buf.Flush()
	}
	if err := w.f.Close(); w.err == nil {
		w.err = err
	}
	return w.err
}

// write encodes, redacts and buffers one line; buf is scratch space for
// the encoding, returned for the caller's next line.
func (w *Writer) write(l Line, buf []byte) []byte {
	l.TS = time.Now().UTC().Truncate(time.Millisecond)
	b, ok := appendLine(buf[:0], l)
	if !ok {
		var err error
		if b, err = json.Marshal(l); err != nil {
			// A tool event's JSON that is not JSON: keep the rest.
			l.JSON = nil
			b, _ = json.Marshal(l)
		}
	}
	buf = b[:0]
	if w.hold {
		b = w.red.Redact(b)
	}
	b = append(b, '\n')
	if int64(len(b)) > w.half {
		b, _ = json.Marshal(Line{TS: l.TS, Node: l.Node, Position: l.Position, Call: l.Call, Kind: KindDropped, Dropped: int64(len(b))})
		b = append(b, '\n')
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.put(b, l.Position)
	return buf
}

// put buffers a line, rotating first when it would take the segment past
// half the cap. The caller holds mu.
func (w *Writer) put(b []byte, position string) {
	if w.err != nil {
		return
	}
	if w.size > 0 && w.size+int64(len(b)) > w.half {
		w.rotate()
		if w.err != nil {
			return
		}
	}
	n, err := w.buf.Write(b)
	w.size += int64(n)
	w.cur[position] += int64(n)
	w.err = err
}

// rotate makes the current segment the previous one, dropping the older,
// and starts a new segment with a "dropped" line per position whose
// output went. The caller holds mu.
func (w *Writer) rotate() {
	if w.err = w.buf.Flush(); w.err != nil {
		return
	}
	if w.err = w.f.Close(); w.err != nil {
		return
	}
	if w.err = os.Rename(filepath.Join(w.dir, FileName), filepath.Join(w.dir, OldFileName)); w.err != nil {
		return
	}
	if w.err = w.openSegment(); w.err != nil {
		return
	}
	dropped, unknown := w.old, w.oldUnknown
	w.old, w.oldUnknown = w.cur, w.curUnknown
	w.cur, w.curUnknown = map[string]int64{}, 0
	now := time.Now().UTC().Truncate(time.Millisecond)
	if unknown > 0 {
		dropped[""] += unknown
	}
	positions := make([]string, 0, len(dropped))
	for p := range dropped {
		positions = append(positions, p)
	}
	slices.Sort(positions)
	for _, p := range positions {
		b, _ := json.Marshal(Line{TS: now, Position: p, Kind: KindDropped, Dropped: dropped[p]})
		n, err := w.buf.Write(append(b, '\n'))
		w.size += int64(n)
		w.cur[p] += int64(n)
		if w.err = err; err != nil {
			return
		}
	}
}

// Call is the stream of one engine call. It is used by the goroutine
// that runs the call; a nil *Call discards everything.
type Call struct {
	w              *Writer
	node, position string
	call           int
	// pend is text held back from redaction until the next delta (or
	// End), since a secret may continue there; pendKind is its kind.
	pend     []byte
	pendKind string
	// buf is the scratch space lines are encoded in.
	buf []byte
}

// Call starts the stream of engine call number call (1-based) of a
// position. A nil *Writer returns a nil *Call.
func (w *Writer) Call(node, position string, call int) *Call {
	if w == nil {
		return nil
	}
	return &Call{w: w, node: node, position: position, call: call}
}

// Emit writes one streamed event. It always returns nil: the stream is
// for display, and its trouble must never end an attempt (a plugin.Emitter
// error would).
func (c *Call) Emit(ev plugin.RunEvent) error {
	if c == nil {
		return nil
	}
	kind := string(ev.Kind)
	if kind == KindText || kind == KindThinking {
		if c.pendKind != kind {
			c.flush()
		}
		if !c.w.hold {
			c.line(Line{Kind: kind, Text: ev.Text})
			return nil
		}
		c.pend, c.pendKind = append(c.pend, ev.Text...), kind
		out, n := c.w.red.RedactStream(c.pend)
		if n > 0 {
			c.line(Line{Kind: kind, Text: string(out)})
			c.pend = append(c.pend[:0], c.pend[n:]...)
		}
		return nil
	}
	c.flush()
	l := Line{Kind: kind, Tool: ev.ToolName, ToolID: ev.ToolID, JSON: ev.ToolJSON}
	if ev.Kind == plugin.EventUsage {
		u := ev.Usage
		l.Usage = &u
	}
	c.line(l)
	return nil
}

// End writes the text still held back and closes the call's stream.
func (c *Call) End() {
	if c == nil {
		return
	}
	c.flush()
	c.line(Line{Kind: KindEnd})
}

// flush writes the held-back text, redacted whole.
func (c *Call) flush() {
	if len(c.pend) > 0 {
		c.line(Line{Kind: c.pendKind, Text: string(c.w.red.Redact(c.pend))})
	}
	c.pend, c.pendKind = c.pend[:0], ""
}

func (c *Call) line(l Line) {
	l.Node, l.Position, l.Call = c.node, c.position, c.call
	c.buf = c.w.write(l, c.buf)
}
