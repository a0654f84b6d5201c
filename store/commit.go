package store

import (
	"context"
	"fmt"
	"hash/crc32"
	"io"
	"time"
)

// prepared is a NewEvent checked and encoded up to what does not depend on
// its position in the stream.
type prepared struct {
	id    string
	typ   string
	canon []byte
	hash  uint64
	fresh bool // the id is a new random UUID
}

// Append is Run.Append after the ownership check.
func (s *stream) Append(ctx context.Context, expectedRev int64, events ...NewEvent) (int64, error) {
	if expectedRev < 0 {
		return 0, fmt.Errorf("%w: expectedRev %d is negative", ErrInvalidEvent, expectedRev)
	}
	if len(events) == 0 {
		return 0, fmt.Errorf("%w: empty batch", ErrInvalidEvent)
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	// Checked and canonicalised before the stream is locked: the CPU work
	// of one batch overlaps another's fdatasync.
	evs, err := s.prepare(events)
	if err != nil {
		return 0, err
	}
	if err := s.lock(ctx); err != nil {
		return 0, err
	}
	defer s.unlock()
	switch {
	case s.closed.Load():
		return 0, ErrClosed
	case s.failed != nil:
		return 0, s.failed
	case s.ro:
		return 0, fmt.Errorf("%w: %s", ErrReadOnly, s.path)
	}
	return s.commit(evs, expectedRev)
}

// commit writes one prepared batch under the exclusive flock: it picks up
// (and if need be recovers) what other handles wrote, checks expectedRev,
// encodes the lines, makes room in the zero tail, writes them with one
// pwrite(2) and calls fdatasync(2) once. The caller holds mu.
func (s *stream) commit(evs []prepared, expectedRev int64) (int64, error) {
	if err := s.f.Lock(true, true); err != nil {
		return 0, storageErr("lock", s.path, err)
	}
	defer s.f.Unlock()
	// Another handle may have appended (or crashed mid-append) since this
	// handle last looked: one read of the bytes at the committed end tells
	// (atEnd), and, when nothing changed, whether the file ends there; its
	// size past the end is what this handle's own fills and writes made it
	// (sizeSeen), so an append costs no fstat(2).
	more, ends, err := s.atEnd()
	if err != nil {
		return 0, err
	}
	size := s.sizeSeen
	switch {
	case more:
		if size, err = s.fileSize(); err != nil {
			return 0, err
		}
		res, err := s.scanTail(context.Background(), size, tailCut)
		if err == nil && res.torn {
			if err = s.cutTorn(res.tornEnd); err == nil {
				size = s.st.size
			}
		}
		if err != nil {
			s.sizeSeen = 0
			return 0, err
		}
		s.publish()
	case ends:
		size = s.st.size
	case size <= s.st.size:
		// NULs follow the end, and this handle has not learned how many.
		if size, err = s.fileSize(); err != nil {
			return 0, err
		}
	}
	s.sizeSeen = 0 // until this batch is on disk
	st := s.st
	if expectedRev != st.rev {
		return 0, &ConflictError{Expected: expectedRev, Current: st.rev}
	}
	buf, lines, err := s.encode(evs)
	if cap(buf) <= 4<<20 {
		s.wbuf = buf[:0]
	}
	if err != nil {
		return 0, err
	}
	size = s.makeRoom(size, len(buf))
	if err := s.write(buf); err != nil {
		return 0, err
	}
	if err := s.f.Datasync(); err != nil {
		return 0, s.poison(fmt.Errorf("%w: outcome of the batch unknown, reopen the run to learn it: %w", ErrStoreFailed, storageErr("fdatasync", s.path, err)))
	}
	st.addLines(lines)
	last := lines[len(lines)-1]
	st.crc = crc32.Update(st.crc, castagnoli, buf)
	st.rev, st.size, st.last, st.lastLine = last.rev, st.size+int64(len(buf)), last.digest, last.off
	s.sizeSeen = max(size, st.size)
	s.appended = true
	s.publish()
	if st.rev-s.cachedRev >= cacheEveryAppend {
		s.saveCache()
	}
	return st.rev, nil
}

// encode encodes a batch after the committed stream into s.wbuf, checking
// each id against the stream and the batch's size against the policy.
func (s *stream) encode(evs []prepared) ([]byte, []pendLine, error) {
	st := s.st
	n := int64(len(evs))
	buf := s.wbuf[:0]
	lines := make([]pendLine, 0, len(evs))
	now := time.Now()
	var text []byte // prev's text form
	prev := st.last
	for i, ev := range evs {
		p := pendLine{rev: st.rev + 1 + int64(i), off: st.size + int64(len(buf)), id: ev.id, hash: ev.hash}
		dup, err := st.lookupDuplicate(s.f, &p)
		if err != nil {
			return buf, nil, err
		}
		if dup != 0 {
			return buf, nil, fmt.Errorf("%w: event %d of %d (type %q): its id is already used by rev %d", ErrInvalidEvent, i+1, n, ev.typ, dup)
		}
		text = text[:0]
		if p.rev > 1 {
			text = appendDigest(text, prev)
		}
		buf, p.digest = encodeLine(buf, p.rev, st.rev+n, ev.id, ev.typ, now, ev.canon, text)
		prev = p.digest
		lines = append(lines, p)
	}
	if max := s.pol.MaxBatchBytes; max > 0 && int64(len(buf)) > max {
		return buf, nil, &LimitError{Limit: "max_batch_bytes", Max: max, Size: int64(len(buf)),
			What: fmt.Sprintf("a batch of %d event(s)", n)}
	}
	return buf, lines, nil
}

// write writes b at the committed end with one pwrite(2), over the zero
// tail when it has room (a plain append otherwise). A failed (or short)
// write is undone: the file is truncated back to the committed end (the
// zero tail goes too) and fdatasync'd, so that no crash brings the partial
// batch back, and the write's error is returned with the handle still
// usable. If undoing fails the handle is poisoned.
func (s *stream) write(b []byte) error {
	n, err := s.f.WriteAt(b, s.st.size)
	if err == nil && n != len(b) {
		err = io.ErrShortWrite
	}
	if err == nil {
		return nil
	}
	werr := storageErr("write", s.path, err)
	terr := s.f.Truncate(s.st.size)
	if terr == nil {
		terr = s.f.Datasync()
	}
	if terr != nil {
		return s.poison(fmt.Errorf("%w: the write failed (%w) and undoing it failed (%v); reopen the run", ErrStoreFailed, werr, terr))
	}
	return werr
}

// poison makes err the handle's sticky failure and returns it. The caller
// holds mu.
func (s *stream) poison(err error) error {
	if s.failed == nil {
		s.failed = err
	}
	return s.failed
}

// prepare checks and canonicalises the events of one Append.
func (s *stream) prepare(events []NewEvent) ([]prepared, error) {
	return prepareEvents(s.pol, events, false)
}
