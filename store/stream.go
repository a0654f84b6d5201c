package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"
)

// AnyRev as Append's expectedRev appends without a revision check. Use it
// for events whose order relative to concurrent appends does not matter;
// such appends from many goroutines share fsyncs (group commit).
const AnyRev int64 = -1

// eventsFile is the stream's file name inside the run directory.
const eventsFile = "events.jsonl"

// followPoll is how often Follow looks for events appended by other
// processes (appends through the same Stream wake it at once).
const followPoll = 50 * time.Millisecond

// groupCommitMaxWait bounds how long a commit round, once written, waits
// for appenders of the previous round that are still preparing their next
// batch, before it calls fdatasync.
const groupCommitMaxWait = time.Millisecond

// NewEvent is an event to append.
type NewEvent struct {
	// ID identifies the event; it must be unique in the stream: 1..256
	// bytes of printable ASCII other than '"' and '\'. Empty means a
	// random UUID. A caller-chosen id makes Append retries idempotent.
	ID string
	// Type names the event, [A-Za-z0-9][A-Za-z0-9._:/-]{0,127}, e.g.
	// "graph:node-completed".
	Type string
	// Data is marshalled with encoding/json (json.RawMessage passes
	// through) and stored in RFC 8785 canonical form. Numbers must survive
	// that unchanged (I-JSON: integers beyond ±2^53 must be strings).
	Data any
}

// prepared is a NewEvent checked and encoded up to what does not depend on
// its position in the stream.
type prepared struct {
	id    string
	typ   string
	canon []byte
	hash  uint64
	fresh bool // the id is a new random UUID, so no retry can repeat it
}

// appendReq is one Append call waiting for a commit round.
type appendReq struct {
	expected int64
	events   []prepared
	wake     chan struct{} // one token: done or promoted
	taken    bool          // a leader has it (guarded by Stream.mu)
	done     atomic.Bool   // set (after rev and err) when the round has answered it
	promoted bool
	left     bool // its Append returned before the outcome was known
	rev      int64
	err      error
}

func (r *appendReq) signal() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// published is the part of the state readers use without ioMu.
type published struct {
	rev     int64
	size    int64
	offsets []int64 // read-only view: elements below len never change
}

// Stream is a run's event stream (events.jsonl): an append-only, hash-chained
// sequence of events. It is safe for concurrent use. Appends through one
// Stream share fsyncs; appends through different Streams (in this or other
// processes) are serialised with flock(2) on the file.
type Stream struct {
	path string
	pol  *policy
	f    *os.File
	ro   bool // opened read-only (no permission to write)
	ops  fileOps

	ioMu      sync.Mutex  // held by a commit round, a refresh or recovery
	st        *chainState // guarded by ioMu
	cachedRev int64       // rev the cache file covers (ioMu)
	loadedRev int64       // rev of the cache the open started from (0: full validation)
	wbuf      []byte      // write buffer reused by commit rounds (ioMu)

	mu        sync.Mutex
	pub       published
	queue     []*appendReq
	leading   bool
	closed    bool
	failed    error         // sticky ErrStoreFailed
	changed   chan struct{} // closed (and replaced) when pub advances
	appended  bool          // this handle committed something
	lastRound int           // requests in the last commit round
	arrival   chan struct{} // closed when a waiting leader should look again
	preparing int           // Appends preparing their batch (not yet queued)
	returning atomic.Int64  // acknowledged Appends that have not returned yet
	waiting   atomic.Bool   // a leader in takeLate may wait (see returned)
	waitFor   int           // queued requests a waiting leader wants
}

// openStream opens (creating if missing) and recovers the stream in dir.
// A readOnly stream is opened without write access: nothing is created,
// a torn tail is left in place (and not shown), the cache is not written.
func openStream(ctx context.Context, dir string, pol *policy, readOnly bool) (*Stream, error) {
	path := filepath.Join(dir, eventsFile)
	s := &Stream{path: path, pol: pol, ops: defaultFileOps, changed: make(chan struct{})}
	if readOnly {
		f, err := os.Open(path)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w: %s has no %s", ErrRunNotFound, dir, eventsFile)
		}
		if err != nil {
			return nil, fmt.Errorf("store: open %s: %w", path, err)
		}
		s.f, s.ro = f, true
		if err := s.load(ctx); err != nil {
			f.Close()
			return nil, err
		}
		return s, nil
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND, 0)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		f, err = os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o644)
		if err == nil {
			err = syncDir(dir)
		}
	case errors.Is(err, fs.ErrPermission):
		f, err = os.Open(path)
		s.ro = true
	}
	if err != nil {
		if f != nil {
			f.Close()
		}
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	s.f = f
	if err := s.load(ctx); err != nil {
		f.Close()
		return nil, err
	}
	return s, nil
}

// load builds the state from the cache (when usable) and validates the rest
// of the file, recovering a torn last batch.
func (s *Stream) load(ctx context.Context) error {
	s.ioMu.Lock()
	defer s.ioMu.Unlock()
	size, err := s.fileSize()
	if err != nil {
		return err
	}
	st, ok, err := loadCache(s.f, s.path, size)
	if err != nil {
		return fmt.Errorf("store: read %s: %w", s.path, err)
	}
	if ok {
		s.cachedRev, s.loadedRev = st.rev, st.rev
	} else {
		st = newChainState()
	}
	s.st = st
	// First pass without the file lock (a concurrent writer in another
	// process is not held up by a long validation). Bytes of complete
	// batches never change, so only a torn or damaged result needs a second
	// look under the lock, from the last good batch boundary.
	res, err := s.scanTail(ctx, size)
	var ce *CorruptError
	if err != nil && !errors.As(err, &ce) {
		return err
	}
	if err != nil || res.torn {
		if _, err := s.lockedScan(ctx, !s.ro); err != nil {
			return err
		}
	}
	s.publish()
	if !s.ro && s.st.rev-s.cachedRev >= cacheTail {
		s.saveCache()
	}
	return nil
}

// lockedScan rescans the tail under flock (exclusive when it may recover)
// and, when recovering, cuts a torn last batch.
func (s *Stream) lockedScan(ctx context.Context, recoverTorn bool) (scanResult, error) {
	how := lockShared
	if recoverTorn {
		how = lockExclusive
	}
	if err := flock(s.f, how); err != nil {
		return scanResult{}, fmt.Errorf("store: lock %s: %w", s.path, err)
	}
	defer flock(s.f, lockUnlock)
	size, err := s.fileSize()
	if err != nil {
		return scanResult{}, err
	}
	res, err := s.scanTail(ctx, size)
	if err != nil {
		return res, err
	}
	if res.torn && recoverTorn {
		if err := s.cutTorn(size); err != nil {
			return res, err
		}
	}
	return res, nil
}

func (s *Stream) fileSize() (int64, error) {
	fi, err := s.f.Stat()
	if err != nil {
		return 0, fmt.Errorf("store: stat %s: %w", s.path, err)
	}
	return fi.Size(), nil
}

// scanTail validates [st.size, size) and advances the state over every
// complete batch in it.
func (s *Stream) scanTail(ctx context.Context, size int64) (scanResult, error) {
	st := s.st
	if size < st.size {
		return scanResult{}, &CorruptError{Path: s.path, Line: int(st.rev), Rev: st.rev, Offset: size,
			Problem: fmt.Sprintf("file is %d bytes but its committed events end at byte %d (it was shortened)", size, st.size)}
	}
	if size == st.size {
		return scanResult{}, nil
	}
	bufSize := 256 << 10
	if size-st.size < int64(bufSize) {
		bufSize = int(size-st.size) + 1
	}
	lr := newLineReader(io.NewSectionReader(s.f, st.size, size-st.size), st.size, bufSize)
	return newScanner(ctx, s.path, st, s.f, lr).run()
}

// cutTorn moves the bytes after the last complete batch to
// events.jsonl.torn-<ts> (fsynced, directory fsynced) and truncates the
// stream to the batch boundary (fsynced). The caller holds the exclusive
// flock.
func (s *Stream) cutTorn(size int64) error {
	from := s.st.size
	base := fmt.Sprintf("%s.torn-%s", s.path, time.Now().UTC().Format("20060102T150405.000000000Z"))
	name := base
	tf, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	for i := 1; errors.Is(err, fs.ErrExist) && i < 100; i++ {
		name = fmt.Sprintf("%s-%d", base, i)
		tf, err = os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	}
	if err != nil {
		return fmt.Errorf("store: recover %s: %w", s.path, err)
	}
	_, err = io.Copy(tf, io.NewSectionReader(s.f, from, size-from))
	if err == nil {
		err = tf.Sync()
	}
	if cerr := tf.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = syncDir(filepath.Dir(s.path))
	}
	if err == nil {
		err = s.ops.truncate(s.f, from)
	}
	if err == nil {
		err = s.f.Sync()
	}
	if err != nil {
		return fmt.Errorf("store: recover torn tail of %s: %w", s.path, err)
	}
	return nil
}

// publish makes the state visible to readers and wakes followers. The
// caller holds ioMu.
func (s *Stream) publish() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pub.rev == s.st.rev && s.pub.size == s.st.size {
		return
	}
	s.pub = published{rev: s.st.rev, size: s.st.size, offsets: s.st.offsets[:len(s.st.offsets):len(s.st.offsets)]}
	if !s.closed {
		close(s.changed)
		s.changed = make(chan struct{})
	}
}

// saveCache writes the cache file for the current state. Failures are
// ignored: the cache is an optimisation. The caller holds ioMu.
func (s *Stream) saveCache() {
	if s.st.rev == 0 || s.st.rev == s.cachedRev {
		return
	}
	if writeCache(s.path, encodeCache(s.st)) == nil {
		s.cachedRev = s.st.rev
	}
}

// refresh picks up batches other handles (or processes) appended. A torn
// tail is left alone: it is either a write in progress or the remains of a
// crashed writer, which the next writer or open recovers.
func (s *Stream) refresh(ctx context.Context) error {
	if err := s.usable(); err != nil {
		return err
	}
	s.ioMu.Lock()
	defer s.ioMu.Unlock()
	size, err := s.fileSize()
	if err != nil {
		return err
	}
	if size == s.st.size {
		return nil
	}
	_, err = s.scanTail(ctx, size)
	var ce *CorruptError
	if errors.As(err, &ce) {
		// Confirm under the lock: an unlocked read can race with another
		// process recovering a torn tail and writing in its place.
		_, err = s.lockedScan(ctx, false)
	}
	s.publish()
	return err
}

// usable reports whether the stream may be used.
func (s *Stream) usable() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	return nil
}

// Rev returns the last committed revision (0 for an empty stream), after
// picking up batches appended through other handles or processes. If that
// refresh fails it returns the last revision this handle knows.
func (s *Stream) Rev() int64 {
	_ = s.refresh(context.Background())
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pub.rev
}

// Append appends events as one batch and returns the revision of its last
// event. The batch is all-or-nothing: it is written with one write(2) and
// made durable with fdatasync(2) before Append returns, and recovery never
// shows part of it.
//
// expectedRev must be the stream's last revision (0 for an empty stream),
// or AnyRev. A stale expectedRev returns a *ConflictError
// (ErrRevisionConflict) carrying the current revision. A batch that is an
// identical retry (same ids, types and data, event for event) of a batch
// already committed — an Append whose acknowledgement was lost — returns
// that batch's last revision and writes nothing, whatever expectedRev says;
// so does a repeat of a batch queued earlier in the same commit round (a
// retry that caught up with its original), once that batch is durable.
// Ids must be caller-chosen for a retry to be recognised.
//
// Other errors: ErrInvalidEvent (empty batch, bad id or type, data that is
// not JSON or not exactly canonicalisable, an id already in the stream),
// ErrKnownSecret, ErrStorageLimitExceeded (*LimitError),
// ErrCorruptEventStream (the file was damaged under us), ErrStoreFailed
// (fsync failed: the outcome is unknown and the handle is poisoned),
// ErrClosed, I/O errors. If ctx ends while the batch waits its turn, Append
// returns ctx.Err() and nothing is written; if it ends while the batch is
// being written, Append returns an error wrapping ctx.Err() and the outcome
// is unknown (retry with the same ids to learn it).
func (s *Stream) Append(ctx context.Context, expectedRev int64, events ...NewEvent) (int64, error) {
	if expectedRev < AnyRev {
		return 0, fmt.Errorf("%w: expectedRev %d is negative (use AnyRev for no check)", ErrInvalidEvent, expectedRev)
	}
	if len(events) == 0 {
		return 0, fmt.Errorf("%w: empty batch", ErrInvalidEvent)
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	s.mu.Lock()
	s.preparing++
	s.mu.Unlock()
	evs, err := s.prepareCounted(events)
	req := &appendReq{expected: expectedRev, events: evs, wake: make(chan struct{}, 1)}
	s.mu.Lock()
	s.preparing--
	switch {
	case err != nil:
	case s.closed:
		err = ErrClosed
	case s.failed != nil:
		err = s.failed
	case s.ro:
		err = fmt.Errorf("%w: %s", ErrReadOnly, s.path)
	}
	if err != nil {
		s.nudgeLocked()
		s.mu.Unlock()
		return 0, err
	}
	s.queue = append(s.queue, req)
	s.nudgeLocked()
	lead := !s.leading
	s.leading = true
	s.mu.Unlock()

	for {
		if lead {
			s.lead()
		}
		select {
		case <-req.wake:
		case <-ctx.Done():
		}
		if req.done.Load() {
			s.returned()
			return req.rev, req.err
		}
		s.mu.Lock()
		if req.done.Load() {
			s.mu.Unlock()
			s.returned()
			return req.rev, req.err
		}
		if ctx.Err() != nil {
			if req.taken {
				req.left = true
				s.mu.Unlock()
				return 0, fmt.Errorf("store: append to %s interrupted while being written, outcome unknown: %w", s.path, ctx.Err())
			}
			s.dropLocked(req)
			s.mu.Unlock()
			return 0, ctx.Err()
		}
		lead = req.promoted
		req.promoted = false
		s.mu.Unlock()
	}
}

// dropLocked removes a request that was not taken. If leadership had been
// handed to it, it passes on. The caller holds mu.
func (s *Stream) dropLocked(req *appendReq) {
	for i, r := range s.queue {
		if r == req {
			s.queue = append(s.queue[:i], s.queue[i+1:]...)
			break
		}
	}
	if req.promoted {
		req.promoted = false
		s.handOnLocked()
	}
}

// handOnLocked gives leadership to the first queued request, or ends it.
// The caller holds mu.
func (s *Stream) handOnLocked() {
	if len(s.queue) > 0 {
		s.queue[0].promoted = true
		s.queue[0].signal()
		return
	}
	s.leading = false
}

// returned counts an acknowledged Append as returned, without taking mu
// (all of a round's appenders return at once). The last one wakes a leader
// that may be waiting for them: takeLate sets waiting before it reads
// returning, and this reads waiting after it decrements, so one of the two
// sees the other.
func (s *Stream) returned() {
	if s.returning.Add(-1) == 0 && s.waiting.Load() {
		s.mu.Lock()
		s.nudgeLocked()
		s.mu.Unlock()
	}
}

// nudgeLocked wakes a leader waiting in takeLate once what it waits for
// is queued, or once no Append is on its way: none preparing its batch and
// none just acknowledged still returning (its caller may append again at
// once, as a loop of appenders does). The caller holds mu.
func (s *Stream) nudgeLocked() {
	if s.arrival != nil && (len(s.queue) >= s.waitFor || s.preparing == 0 && s.returning.Load() == 0) {
		close(s.arrival)
		s.arrival = nil
	}
}

// lead runs one commit round over the queued requests (and those that
// join it while it is being written), then hands leadership to the next
// queued request (whose goroutine runs the next round) or ends it.
func (s *Stream) lead() {
	s.mu.Lock()
	batch := s.queue
	s.queue = nil
	for _, r := range batch {
		r.taken = true
	}
	want := s.lastRound + 1 // rounds may grow: appenders may have joined
	s.mu.Unlock()
	if len(batch) > 0 {
		batch = s.commitRound(batch, want)
	}
	s.mu.Lock()
	s.lastRound = len(batch)
	for _, r := range batch {
		if !r.left {
			s.returning.Add(1)
		}
		r.done.Store(true)
		r.signal()
	}
	s.handOnLocked()
	s.mu.Unlock()
}

// prepareCounted is prepare for an Append counted in s.preparing: if it
// panics (a MarshalJSON method may), the count is taken back before the
// panic goes on, so that no round waits for this Append.
func (s *Stream) prepareCounted(events []NewEvent) (evs []prepared, err error) {
	defer func() {
		if p := recover(); p != nil {
			s.mu.Lock()
			s.preparing--
			s.nudgeLocked()
			s.mu.Unlock()
			panic(p)
		}
	}()
	return s.prepare(events)
}

// prepare checks and canonicalises the events of one Append.
func (s *Stream) prepare(events []NewEvent) ([]prepared, error) {
	return prepareEvents(s.pol, events)
}
