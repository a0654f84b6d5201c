package store

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"hash/crc32"
	"io"
	"runtime"
	"slices"
	"time"
)

// commitRound runs one group-commit round: under the exclusive flock it
// picks up (and if need be recovers) what other handles wrote and checks
// the queued batches in order; while appenders of the previous round are
// still on their way (up to want requests, at most groupCommitMaxWait), it
// takes and checks the batches they queue meanwhile; then it writes every
// accepted batch with one write(2), calls fdatasync(2) once and only then
// sets results. It returns every request it handled — batch and the late
// joiners — each with rev or err set.
func (s *Stream) commitRound(batch []*appendReq, want int) []*appendReq {
	all := batch
	s.ioMu.Lock()
	defer s.ioMu.Unlock()
	s.mu.Lock()
	closed, failed := s.closed, s.failed
	s.mu.Unlock()
	switch {
	case closed:
		failAll(all, ErrClosed)
		return all
	case failed != nil:
		failAll(all, failed)
		return all
	}
	if err := flock(s.f, lockExclusive); err != nil {
		failAll(all, fmt.Errorf("store: lock %s: %w", s.path, err))
		return all
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
		failAll(all, err)
		return all
	}
	if size != s.st.size {
		res, err := s.scanTail(context.Background(), size)
		if err == nil && res.torn {
			err = s.cutTorn(size)
		}
		if err != nil {
			failAll(all, err)
			return all
		}
		s.publish()
	}

	st := s.st
	pl := &planner{s: s, cur: st.rev, prev: st.last, buf: s.wbuf[:0], now: time.Now()}
	defer func() {
		if cap(pl.buf) > 4<<20 {
			pl.buf = nil
		}
		s.wbuf = pl.buf[:0]
	}()
	deadline := time.Now().Add(groupCommitMaxWait)
	for pending := batch; len(pending) > 0; {
		pl.plan(pending)
		pending = s.takeLate(len(all), want, deadline)
		all = append(all, pending...)
	}
	// A round that answers anything with success fdatasyncs once, also
	// when it wrote nothing: the identical retries it answered rest on a
	// batch that may come from a handle whose own fdatasync failed.
	if len(pl.buf) == 0 && len(pl.followers) == 0 {
		return all
	}
	if werr := s.write(pl.buf); werr != nil {
		err := fmt.Errorf("store: write %s: %w", s.path, werr)
		// Undone durably: a crash must not bring back batches reported as
		// not written. The fdatasync also covers the identical retries
		// answered before the round's first accepted batch.
		terr := s.ops.truncate(s.f, st.size)
		if terr == nil {
			terr = s.ops.sync(s.f)
		}
		if terr != nil {
			failRound(all, pl, s.poison(fmt.Errorf("%w: write to %s failed (%v) and undoing the partial round failed: %v", ErrStoreFailed, s.path, werr, terr)))
			return all
		}
		failAll(pl.accepted, err)
		return s.requeueAfter(all, pl.accepted, err)
	}
	if serr := s.ops.sync(s.f); serr != nil {
		failRound(all, pl, s.poison(fmt.Errorf("%w: fdatasync %s: %v (outcome of the batch unknown; reopen the run)", ErrStoreFailed, s.path, serr)))
		return all
	}
	if len(pl.lines) == 0 {
		return all
	}
	st.addLines(pl.lines)
	last := pl.lines[len(pl.lines)-1]
	st.crc = crc32.Update(st.crc, castagnoli, pl.buf)
	st.rev, st.size, st.last, st.lastLine = last.rev, st.size+int64(len(pl.buf)), last.digest, last.off
	unlock()
	s.mu.Lock()
	s.appended = true
	s.mu.Unlock()
	s.publish()
	if st.rev-s.cachedRev >= cacheEveryAppend {
		s.saveCache()
	}
	return all
}

// write writes b with one write(2) (nothing when b is empty).
func (s *Stream) write(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	n, err := s.ops.write(s.f, b)
	if err == nil && n != len(b) {
		err = io.ErrShortWrite
	}
	return err
}

// failRound answers a round that poisoned the handle: the identical
// retries and repeats it answered, and every request from its first
// accepted batch on — accepted, or checked against batches whose outcome
// is now unknown — fail with err. Requests before the first accepted batch
// were checked against the stream as it was and keep their answers.
func failRound(all []*appendReq, pl *planner, err error) {
	failAll(pl.followers, err)
	if len(pl.accepted) > 0 {
		failAll(all[slices.Index(all, pl.accepted[0]):], err)
	}
}

// failAll answers every request of reqs with err.
func failAll(reqs []*appendReq, err error) {
	for _, r := range reqs {
		r.rev, r.err = 0, err
	}
}

// requeueAfter handles a round whose write failed (and was undone): the
// requests checked after its first accepted batch were checked against
// batches that were never written — a conflict, a duplicate id or a repeat
// they were told of may not exist — so they go back to the front of the
// queue, unanswered, for the next round. Those whose caller has left get
// err. It returns the requests the round answered. accepted (non-empty,
// already failed with err) are the round's accepted requests.
func (s *Stream) requeueAfter(all, accepted []*appendReq, err error) []*appendReq {
	first := slices.Index(all, accepted[0])
	answered, again := all[:first+1:first+1], []*appendReq(nil)
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range all[first+1:] {
		switch {
		case slices.Contains(accepted, r):
			answered = append(answered, r)
		case r.left:
			r.rev, r.err = 0, err
			answered = append(answered, r)
		default:
			r.rev, r.err, r.taken = 0, nil, false
			again = append(again, r)
		}
	}
	s.queue = append(again, s.queue...)
	return answered
}

// takeLate returns the requests queued while a round was being planned,
// waiting for more while the round (have requests) is smaller than want and
// some Append is on its way — preparing its batch, or acknowledged and still
// returning to a caller that may append again — at most until deadline. It
// is woken (nudgeLocked) when enough are queued or nobody is on the way,
// not at every arrival. It yields the processor once before giving up, for
// appenders just woken.
func (s *Stream) takeLate(have, want int, deadline time.Time) []*appendReq {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.waiting.Store(false)
	yielded := false
	for {
		s.waiting.Store(true) // before returning is read (see returned)
		n := len(s.queue)
		idle := s.preparing == 0 && s.returning.Load() == 0
		if have+n >= want || (idle && (n > 0 || yielded)) || !time.Now().Before(deadline) {
			late := s.queue
			s.queue = nil
			for _, r := range late {
				r.taken = true
			}
			return late
		}
		if idle {
			yielded = true
			s.mu.Unlock()
			runtime.Gosched()
			s.mu.Lock()
			continue
		}
		arrival := make(chan struct{})
		s.arrival, s.waitFor = arrival, want-have
		s.mu.Unlock()
		t := time.NewTimer(time.Until(deadline))
		select {
		case <-arrival:
		case <-t.C:
		}
		t.Stop()
		s.mu.Lock()
		if s.arrival == arrival {
			s.arrival = nil
		}
		yielded = false
	}
}

// planner encodes the batches of a round into one buffer, checking each in
// turn against the stream as it will be after the batches before it.
type planner struct {
	s         *Stream
	accepted  []*appendReq // requests whose batches are planned, in rev order
	followers []*appendReq // requests that repeat an accepted one (see repeats)
	cur       int64        // rev after the batches planned so far
	prev      [32]byte     // digest of rev cur
	buf       []byte
	lines     []pendLine
	idx       roundIndex
	now       time.Time
	text      []byte // scratch for prev's text form
}

// plannerMark is a planner position to return to.
type plannerMark struct {
	cur        int64
	prev       [32]byte
	buf, lines int
}

func (pl *planner) mark() plannerMark {
	return plannerMark{pl.cur, pl.prev, len(pl.buf), len(pl.lines)}
}

func (pl *planner) reset(m plannerMark) {
	pl.cur, pl.prev, pl.buf, pl.lines = m.cur, m.prev, pl.buf[:m.buf], pl.lines[:m.lines]
	pl.idx = roundIndex{} // rebuilt on demand
}

// plan checks and encodes reqs in order, adding those accepted (their rev
// set) to pl.accepted and those repeating one to pl.followers; the others
// get their error.
func (pl *planner) plan(reqs []*appendReq) {
	s, st := pl.s, pl.s.st
	for _, r := range reqs {
		n := int64(len(r.events))
		// An identical retry of a committed batch (the caller lost the
		// acknowledgement) returns that batch's last rev and writes
		// nothing. The batch is found by its first event's id.
		if rev, same, err := s.identicalRetry(r); err != nil {
			r.err = err
			continue
		} else if same {
			r.rev = rev
			// Durable only once an fdatasync of ours says so: the batch may
			// come from a handle whose own fdatasync failed.
			pl.followers = append(pl.followers, r)
			continue
		}
		if o := pl.repeats(r); o != nil {
			r.rev = o.rev
			pl.followers = append(pl.followers, r)
			continue
		}
		if r.expected != AnyRev && r.expected != pl.cur {
			r.err = &ConflictError{Expected: r.expected, Current: pl.cur}
			continue
		}
		m := pl.mark()
		var bad error
		for i, ev := range r.events {
			p := pendLine{rev: pl.cur + 1 + int64(i), off: st.size + int64(len(pl.buf)), id: ev.id, hash: ev.hash}
			if dup, err := s.roundDuplicate(&p, pl.lines[:m.lines], &pl.idx); err != nil {
				bad = err
				break
			} else if dup != 0 {
				bad = fmt.Errorf("%w: event %d of %d (type %q): its id is already used by rev %d", ErrInvalidEvent, i+1, n, ev.typ, dup)
				break
			}
			pl.text = pl.text[:0]
			if p.rev > 1 {
				pl.text = appendDigest(pl.text, pl.prev)
			}
			pl.buf, p.digest = encodeLine(pl.buf, p.rev, pl.cur+n, ev.id, ev.typ, pl.now, ev.canon, pl.text)
			pl.prev = p.digest
			pl.lines = append(pl.lines, p)
		}
		if bad == nil {
			if max := s.pol.MaxBatchBytes; max > 0 && int64(len(pl.buf)-m.buf) > max {
				bad = &LimitError{Limit: "max_batch_bytes", Max: max, Size: int64(len(pl.buf) - m.buf),
					What: fmt.Sprintf("a batch of %d event(s)", n)}
			}
		}
		if bad != nil {
			pl.reset(m)
			r.err = bad
			continue
		}
		pl.cur += n
		r.rev = pl.cur
		pl.accepted = append(pl.accepted, r)
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

// roundIndex maps id hashes to indexes of the lines planned in a round; it
// is built only for large rounds.
type roundIndex struct {
	m map[uint64][]int
	n int // lines indexed so far
}

// roundDuplicate returns the rev already using p.id: in the committed
// stream or among the lines planned earlier in this round. Past 64 planned
// lines it indexes them instead of scanning.
func (s *Stream) roundDuplicate(p *pendLine, planned []pendLine, idx *roundIndex) (int64, error) {
	if rev := plannedDuplicate(p, planned, idx); rev != 0 {
		return rev, nil
	}
	return s.st.lookupDuplicate(s.f, p)
}

// plannedDuplicate returns the rev of the line planned earlier in this
// round that uses p.id, or 0.
func plannedDuplicate(p *pendLine, planned []pendLine, idx *roundIndex) int64 {
	if len(planned) <= 64 {
		for _, q := range planned {
			if q.hash == p.hash && q.id == p.id {
				return q.rev
			}
		}
		return 0
	}
	if idx.m == nil {
		idx.m = make(map[uint64][]int, 2*len(planned))
	}
	for ; idx.n < len(planned); idx.n++ {
		h := planned[idx.n].hash
		idx.m[h] = append(idx.m[h], idx.n)
	}
	for _, i := range idx.m[p.hash] {
		if planned[i].id == p.id {
			return planned[i].rev
		}
	}
	return 0
}

// repeats returns the batch accepted earlier in this round that r repeats
// event for event (id, type, data) — a caller retrying an append whose
// outcome it did not learn, before that append's round has ended — or nil.
// r then shares that batch's outcome.
func (pl *planner) repeats(r *appendReq) *appendReq {
	first := r.events[0]
	if first.fresh || len(pl.accepted) == 0 {
		return nil
	}
	at := plannedDuplicate(&pendLine{id: first.id, hash: first.hash}, pl.lines, &pl.idx)
	if at == 0 {
		return nil
	}
	i, found := slices.BinarySearchFunc(pl.accepted, at, func(o *appendReq, rev int64) int {
		return cmp.Compare(o.rev-int64(len(o.events))+1, rev)
	})
	if !found {
		return nil // the id is inside another batch
	}
	o := pl.accepted[i]
	if !slices.EqualFunc(o.events, r.events, func(a, b prepared) bool {
		return a.id == b.id && a.typ == b.typ && bytes.Equal(a.canon, b.canon)
	}) {
		return nil
	}
	return o
}

// identicalRetry reports whether r repeats, event for event (id, type,
// data), a committed batch — the one that holds r's first event id — and
// returns that batch's last rev. The caller holds ioMu and the flock.
func (s *Stream) identicalRetry(r *appendReq) (int64, bool, error) {
	if r.events[0].fresh {
		return 0, false, nil // an id the caller never saw: not a retry
	}
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
