package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"
)

// eventsFile is the stream's file name inside the run directory.
const eventsFile = "events.jsonl"

// followPoll is how often Follow looks for events appended by other
// processes (appends through the same handle wake it at once).
const followPoll = 50 * time.Millisecond

// NewEvent is an event to append.
type NewEvent struct {
	// ID identifies the event; it must be unique in the stream: 1..256
	// bytes of printable ASCII other than '"' and '\'. Empty means a
	// random UUID. A caller names an event it refers to later (a
	// preflight pause is resumed by its event id).
	ID string
	// Type names the event, [A-Za-z0-9][A-Za-z0-9._:/-]{0,127}, e.g.
	// "graph:node-completed".
	Type string
	// Data is marshalled with encoding/json (json.RawMessage passes
	// through) and stored in RFC 8785 canonical form. Numbers must survive
	// that unchanged (I-JSON: integers beyond ±2^53 must be strings).
	Data any
}

// published is the state readers use without taking the stream's mutex:
// a snapshot replaced (never changed) when a batch commits.
type published struct {
	rev     int64
	size    int64
	offsets []int64       // read-only view: elements below len never change
	next    chan struct{} // closed when a newer snapshot replaces this one, or the stream closes
}

// stream is a run's event stream (events.jsonl): an append-only,
// hash-chained sequence of events with one writer. One mutex serialises
// everything that reads or changes the chain state — an append, a refresh,
// recovery, close; readers work from the published snapshot. Appends
// through different handles (in this or other processes) are serialised
// with flock(2) on the file.
type stream struct {
	path string
	fsys FS
	pol  *policy
	f    File
	ro   bool // opened read-only (no permission to write)

	mu        chan struct{} // the one mutex; a channel so a waiting Append can give up when its ctx ends
	st        *chainState   // guarded by mu
	cachedRev int64         // rev the cache file covers (mu)
	loadedRev int64         // rev of the cache the open started from (0: full validation)
	evidence  int64         // bytes of the file the cache recorded as committed (mu); see doc.go
	wbuf      []byte        // write buffer reused by appends (mu)
	failed    error         // sticky ErrStoreFailed (mu)
	appended  bool          // this handle committed something (mu)
	// noFillUntil is the committed end below which no zero fill is tried
	// after one failed (mu; see makeRoom).
	noFillUntil int64
	// sizeSeen is the file's size as this handle's last batch left it
	// (its fill and its write), 0 when not known (mu; see commit).
	sizeSeen int64
	// marked says this writable handle holds the writer mark shared
	// (File.WriterLock; see trim).
	marked bool

	pub    atomic.Pointer[published]
	closed atomic.Bool
}

// openStream opens (creating if missing) and recovers the stream in dir.
// A readOnly stream is opened without write access: nothing is created,
// a torn tail is left in place (and not shown), the cache is not written.
func openStream(ctx context.Context, fsys FS, dir string, pol *policy, readOnly bool) (*stream, error) {
	path := filepath.Join(dir, eventsFile)
	s := &stream{path: path, fsys: fsys, pol: pol, mu: make(chan struct{}, 1)}
	s.pub.Store(&published{next: make(chan struct{})})
	var f File
	var err error
	if readOnly {
		f, err = fsys.OpenFile(path, os.O_RDONLY, 0)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w: %s has no %s", ErrRunNotFound, dir, eventsFile)
		}
		s.ro = true
	} else {
		// Not O_APPEND: batches are written with pwrite(2) at the
		// committed end, over the zero tail (tail.go).
		f, err = fsys.OpenFile(path, os.O_RDWR, 0)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			f, err = fsys.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
			if err == nil {
				if err = syncDir(fsys, dir); err != nil {
					f.Close()
					return nil, err
				}
			}
		case errors.Is(err, fs.ErrPermission):
			f, err = fsys.OpenFile(path, os.O_RDONLY, 0)
			s.ro = true
		}
	}
	if err != nil {
		return nil, storageErr("open", path, err)
	}
	s.f = f
	// A writer that cannot mark itself (an unsupported file system) is
	// not seen by others' closes, and its own close trims as before. The
	// mark is held exclusive only by a closing writer while it trims;
	// the wait for it ends with ctx.
	if !s.ro {
		err := waitLock(ctx, func() error { return f.WriterLock(false, false) })
		if err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			f.Close()
			return nil, err
		}
		s.marked = err == nil
	}
	if err := s.load(ctx); err != nil {
		f.Close()
		return nil, err
	}
	return s, nil
}

// lock takes the stream's mutex, or gives up when ctx ends first.
func (s *stream) lock(ctx context.Context) error {
	select {
	case s.mu <- struct{}{}:
		return nil
	default:
	}
	select {
	case s.mu <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *stream) unlock() { <-s.mu }

// load builds the state from the cache (when usable) and validates the rest
// of the file, recovering a torn last batch.
func (s *stream) load(ctx context.Context) error {
	s.mu <- struct{}{}
	defer s.unlock()
	size, err := s.fileSize()
	if err != nil {
		return err
	}
	c, err := loadCache(s.fsys, s.f, s.path, size, !s.ro)
	if err != nil {
		return err
	}
	s.evidence = c.evidence
	if c.st != nil {
		s.st, s.cachedRev, s.loadedRev = c.st, c.st.rev, c.st.rev
	} else {
		s.st = newChainState()
	}
	// First pass without the file lock (a concurrent writer in another
	// process is not held up by a long validation). Bytes of complete
	// batches never change, so only a torn or damaged result needs a second
	// look under the lock, from the last good batch boundary.
	res, err := s.scanTail(ctx, size, tailWhole)
	var ce *CorruptError
	if err != nil && !errors.As(err, &ce) {
		return err
	}
	if err != nil || res.torn || c.mismatch != "" {
		// A cache that does not match is evidence against a torn tail
		// too, so nothing is cut until the scan has cleared the stream.
		if _, err := s.lockedScan(ctx, !s.ro && c.mismatch == ""); err != nil {
			return err
		}
	}
	if c.mismatch != "" {
		return c.mismatchError(s.path)
	}
	s.publish()
	if !s.ro && s.st.rev-s.cachedRev >= cacheTail {
		s.saveCache()
	}
	return nil
}

// lockedScan rescans the tail under flock (exclusive when it may recover)
// and, when recovering, cuts a torn last batch. The caller holds mu.
func (s *stream) lockedScan(ctx context.Context, recoverTorn bool) (scanResult, error) {
	if err := waitLock(ctx, func() error { return s.f.Lock(recoverTorn, false) }); err != nil {
		return scanResult{}, storageErr("lock", s.path, err)
	}
	defer s.f.Unlock()
	size, err := s.fileSize()
	if err != nil {
		return scanResult{}, err
	}
	res, err := s.scanTail(ctx, size, tailWhole)
	if err != nil {
		return res, err
	}
	if res.torn && recoverTorn {
		if err := s.cutTorn(res.tornEnd); err != nil {
			return res, err
		}
	}
	return res, nil
}

func (s *stream) fileSize() (int64, error) {
	fi, err := s.f.Stat()
	if err != nil {
		return 0, storageErr("stat", s.path, err)
	}
	return fi.Size(), nil
}

// scanTail validates the lines from st.size up to the zero tail or size
// (the file's size) and advances the state over every complete batch in
// them; mode says how far into the zero tail it reads (tailMode). The
// caller holds mu.
func (s *stream) scanTail(ctx context.Context, size int64, mode tailMode) (scanResult, error) {
	st := s.st
	if size < st.size {
		return scanResult{}, &CorruptError{Path: s.path, Line: int(st.rev), Rev: st.rev, Offset: size,
			Problem: fmt.Sprintf("file is %d bytes but its committed events end at byte %d (it was shortened)", size, st.size)}
	}
	if size == st.size && size >= s.evidence {
		return scanResult{}, nil
	}
	bufSize := 32 << 10 // lines another handle appended, up to the zero tail
	if mode == tailWhole {
		bufSize = 256 << 10
	}
	if size-st.size < int64(bufSize) {
		bufSize = int(size-st.size) + 1
	}
	lr := newLineReader(io.NewSectionReader(s.f, st.size, size-st.size), st.size, bufSize)
	sc := newScanner(ctx, s.path, st, s.f, lr)
	sc.evidence = s.evidence
	sc.tail = mode
	return sc.run()
}

// cutTorn moves the bytes after the last complete batch up to end (the
// zero tail after them is not copied) to events.jsonl.torn-<ts> (fsynced,
// directory fsynced) and truncates the stream to the batch boundary
// (fsynced), which drops the zero tail too. The caller holds mu and the
// exclusive flock.
func (s *stream) cutTorn(end int64) error {
	from := s.st.size
	base := fmt.Sprintf("%s.torn-%s", s.path, time.Now().UTC().Format("20060102T150405.000000000Z"))
	name := base
	tf, err := s.fsys.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	for i := 1; errors.Is(err, fs.ErrExist) && i < 100; i++ {
		name = fmt.Sprintf("%s-%d", base, i)
		tf, err = s.fsys.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	}
	if err != nil {
		return storageErr("create", name, err)
	}
	_, err = io.Copy(tf, io.NewSectionReader(s.f, from, end-from))
	if err == nil {
		err = tf.Sync()
	}
	if cerr := tf.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return storageErr("write", name, err)
	}
	if err := syncDir(s.fsys, filepath.Dir(s.path)); err != nil {
		return err
	}
	if err := s.f.Truncate(from); err != nil {
		return storageErr("truncate", s.path, err)
	}
	if err := s.f.Datasync(); err != nil {
		return storageErr("fdatasync", s.path, err)
	}
	return nil
}

// publish makes the state visible to readers and wakes followers. The
// caller holds mu.
func (s *stream) publish() {
	old := s.pub.Load()
	if old.rev == s.st.rev && old.size == s.st.size {
		return
	}
	offs := s.st.offsets
	s.pub.Store(&published{rev: s.st.rev, size: s.st.size, offsets: offs[:len(offs):len(offs)], next: make(chan struct{})})
	close(old.next)
}

// saveCache writes the cache file for the current state. Failures are
// ignored: the cache is an optimisation. The caller holds mu.
func (s *stream) saveCache() {
	if s.st.rev == 0 || s.st.rev == s.cachedRev {
		return
	}
	if writeCache(s.fsys, s.path, encodeCache(s.st)) == nil {
		s.cachedRev = s.st.rev
		s.evidence = max(s.evidence, s.st.size)
	}
}

// refresh picks up batches other handles (or processes) appended. A torn
// tail is left alone: it is either a write in progress or the remains of a
// crashed writer, which the next writer or open recovers.
func (s *stream) refresh(ctx context.Context) error {
	if s.closed.Load() {
		return ErrClosed
	}
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.unlock()
	if s.closed.Load() {
		return ErrClosed
	}
	if more, err := s.moreAtEnd(); !more || err != nil {
		return err
	}
	size, err := s.fileSize()
	if err != nil {
		return err
	}
	_, err = s.scanTail(ctx, size, tailPeek)
	var ce *CorruptError
	if errors.As(err, &ce) {
		// Confirm under the lock: an unlocked read can race with another
		// process recovering a torn tail and writing in its place.
		_, err = s.lockedScan(ctx, false)
	}
	s.publish()
	return err
}

// Rev returns the last committed revision (0 for an empty stream), after
// picking up batches appended through other handles or processes. If that
// refresh fails it returns the last revision this handle knows.
func (s *stream) Rev() int64 {
	_ = s.refresh(context.Background())
	return s.pub.Load().rev
}
