package store

import (
	"bytes"
	"context"
	"fmt"
	"hash/crc32"
	"io"
	"time"
)

// commitRound appends the batches of one group commit: under the exclusive
// flock it picks up (and if need be recovers) what other handles wrote,
// checks each batch in queue order, writes all accepted batches with one
// write(2), calls fdatasync(2) once and only then sets their results. Each
// request ends with rev set or err set.
func (s *Stream) commitRound(batch []*appendReq) {
	failAll := func(err error) {
		for _, r := range batch {
			r.rev, r.err = 0, err
		}
	}
	s.ioMu.Lock()
	defer s.ioMu.Unlock()
	s.mu.Lock()
	closed, failed := s.closed, s.failed
	s.mu.Unlock()
	switch {
	case closed:
		failAll(ErrClosed)
		return
	case failed != nil:
		failAll(failed)
		return
	}
	if err := flock(s.f, lockExclusive); err != nil {
		failAll(fmt.Errorf("store: lock %s: %w", s.path, err))
		return
	}
	locked := true
	unlock := func() {
		if locked {
			flock(s.f, lockUnlock)
			locked = false
		}
	}
	defer unlock()

	// Another handle may have appended (or crashed mid-append) since this
	// handle last looked.
	size, err := s.fileSize()
	if err != nil {
		failAll(err)
		return
	}
	if size != s.st.size {
		res, err := s.scanTail(context.Background(), size)
		if err == nil && res.torn {
			err = s.cutTorn(size)
		}
		if err != nil {
			failAll(err)
			return
		}
		s.publish()
	}

	st := s.st
	buf := s.wbuf[:0]
	cur, prev := st.rev, st.last
	var lines []pendLine
	var planned []*appendReq
	now := time.Now()
	for _, r := range batch {
		n := int64(len(r.events))
		// An identical retry of a committed batch (the caller lost the
		// acknowledgement) returns that batch's last rev and writes
		// nothing. The batch is found by its first event's id.
		if rev, same, err := s.identicalRetry(r); err != nil {
			r.err = err
			continue
		} else if same {
			r.rev = rev
			continue
		}
		if r.expected != AnyRev && r.expected != cur {
			r.err = &ConflictError{Expected: r.expected, Current: cur}
			continue
		}
		startBuf, startLines, startPrev := len(buf), len(lines), prev
		undo := func(err error) {
			buf, lines, prev = buf[:startBuf], lines[:startLines], startPrev
			r.err = err
		}
		var bad error
		for i, ev := range r.events {
			p := pendLine{rev: cur + 1 + int64(i), off: st.size + int64(len(buf)), id: ev.id, hash: ev.hash}
			if dup, err := s.roundDuplicate(&p, lines[:startLines]); err != nil {
				bad = err
				break
			} else if dup != 0 {
				bad = fmt.Errorf("%w: event %d of %d (type %q): its id is already used by rev %d", ErrInvalidEvent, i+1, n, ev.typ, dup)
				break
			}
			prevStr := ""
			if p.rev > 1 {
				prevStr = digestString(prev)
			}
			buf, p.digest = encodeLine(buf, p.rev, cur+n, ev.id, ev.typ, now, ev.canon, prevStr)
			prev = p.digest
			lines = append(lines, p)
		}
		if bad != nil {
			undo(bad)
			continue
		}
		if max := s.pol.MaxBatchBytes; max > 0 && int64(len(buf)-startBuf) > max {
			undo(&LimitError{Limit: "max_batch_bytes", Max: max, Size: int64(len(buf) - startBuf),
				What: fmt.Sprintf("a batch of %d event(s)", n)})
			continue
		}
		cur += n
		r.rev = cur
		planned = append(planned, r)
	}
	defer func() {
		if cap(buf) > 4<<20 {
			buf = nil
		}
		s.wbuf = buf[:0]
	}()
	if len(planned) == 0 {
		return
	}
	failPlanned := func(err error) {
		for _, r := range planned {
			r.rev, r.err = 0, err
		}
	}
	n, werr := s.ops.write(s.f, buf)
	if werr == nil && n != len(buf) {
		werr = io.ErrShortWrite
	}
	if werr != nil {
		err := fmt.Errorf("store: write %s: %w", s.path, werr)
		if terr := s.ops.truncate(s.f, st.size); terr != nil {
			err = s.poison(fmt.Errorf("%w: write to %s failed (%v) and truncating the partial batch failed: %v", ErrStoreFailed, s.path, werr, terr))
		}
		failPlanned(err)
		return
	}
	if serr := s.ops.sync(s.f); serr != nil {
		failPlanned(s.poison(fmt.Errorf("%w: fdatasync %s: %v (outcome of the batch unknown; reopen the run)", ErrStoreFailed, s.path, serr)))
		return
	}
	st.addLines(lines)
	last := lines[len(lines)-1]
	st.crc = crc32.Update(st.crc, castagnoli, buf)
	st.rev, st.size, st.last, st.lastLine = last.rev, st.size+int64(len(buf)), last.digest, last.off
	unlock()
	s.mu.Lock()
	s.appended = true
	s.mu.Unlock()
	s.publish()
	if st.rev-s.cachedRev >= cacheEveryAppend {
		s.saveCache()
	}
}

// poison makes err the handle's sticky failure and returns the sticky one.
func (s *Stream) poison(err error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failed == nil {
		s.failed = err
	}
	return s.failed
}

// roundDuplicate returns the rev already using p.id: in the committed
// stream or among the lines planned earlier in this round.
func (s *Stream) roundDuplicate(p *pendLine, planned []pendLine) (int64, error) {
	for _, q := range planned {
		if q.hash == p.hash && q.id == p.id {
			return q.rev, nil
		}
	}
	return s.st.lookupDuplicate(s.f, p)
}

// identicalRetry reports whether r repeats, event for event (id, type,
// data), a committed batch — the one that holds r's first event id — and
// returns that batch's last rev. The caller holds ioMu and the flock.
func (s *Stream) identicalRetry(r *appendReq) (int64, bool, error) {
	st := s.st
	first := pendLine{id: r.events[0].id, hash: r.events[0].hash}
	at, err := st.lookupDuplicate(s.f, &first)
	if err != nil || at == 0 {
		return 0, false, err
	}
	n := int64(len(r.events))
	start, end := at-1, at-1+n
	if end > st.rev {
		return 0, false, nil
	}
	same := true
	err = readCommitted(s.f, s.path, st.offsets, st.size, max(start, 1), end, func(env *envelope) error {
		if env.rev == start { // the batch before must end here
			same = same && env.batchEnd == env.rev
			return nil
		}
		ev := r.events[env.rev-start-1]
		same = same && env.batchEnd == end && string(env.id) == ev.id && string(env.typ) == ev.typ && bytes.Equal(env.data, ev.canon)
		return nil
	})
	if err != nil {
		return 0, false, err
	}
	return end, same, nil
}
