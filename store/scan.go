package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"path/filepath"

	"github.com/obversa/obversa/internal/shellquote"
)

// indexEvery is the spacing of the in-memory offset index: the byte offset
// of every indexEvery-th line is kept, so a read from any rev skips at most
// indexEvery-1 lines.
const indexEvery = 64

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// chainState is what is known about a validated prefix of the stream: it
// ends at a batch boundary and every line in it passed full validation.
type chainState struct {
	rev      int64    // last rev in the prefix; 0 for an empty stream
	size     int64    // bytes in the prefix
	last     [32]byte // digest of rev
	lastLine int64    // offset of the line of rev
	crc      uint32   // CRC-32C of the prefix bytes
	offsets  []int64  // offsets[i] is the offset of the line of rev i*indexEvery+1
	idHashes []uint64 // idHashes[r-1] is idHash of rev r's id
	// ids maps an id hash to the first rev holding it; nil while a state
	// decoded from the cache has not been indexed yet (indexIDs builds it
	// on the first duplicate check: a read-only open that reads no line
	// past the cache never needs it).
	ids map[uint64]int64
	// idsFrom is the cache file the unindexed id hashes came from, named
	// by the *IndexError of a cache that records one id twice.
	idsFrom string
	// exact holds the ids whose hash collided with an earlier id's (and
	// that earlier id), mapped to their rev, so duplicate detection stays
	// exact under hash collisions.
	exact map[string]int64
	// byID, when non-nil, replaces ids/exact/idHashes with a plain map of
	// every id (used by Verify, which never reads lines back).
	byID map[string]int64
}

func newChainState() *chainState {
	return &chainState{ids: map[uint64]int64{}}
}

// idHash is FNV-1a (64 bit) of an event id, the key of the id index.
func idHash(id []byte) uint64 {
	const offset, prime = 14695981039346656037, 1099511628211
	h := uint64(offset)
	for _, c := range id {
		h ^= uint64(c)
		h *= prime
	}
	return h
}

// pendLine is a line of the batch being assembled.
type pendLine struct {
	rev    int64
	off    int64
	id     string
	hash   uint64
	digest [32]byte
	// collideID/collideRev name an earlier id with the same hash (found
	// while checking for duplicates), so commit can keep ids exact.
	collideID  string
	collideRev int64
}

// scanResult describes how a scan ended.
type scanResult struct {
	events int64  // lines committed by this scan
	torn   bool   // the bytes from the state's end to tornEnd are a torn last batch
	why    string // why the tail is torn
	// tornEnd is the offset just past the torn bytes: the end of the
	// stream, or past its last byte that is not NUL when a zero tail
	// follows.
	tornEnd int64
}

// scanner validates lines appended to a chainState. It commits a batch to
// the state only when its last line (rev == batch_end) has been validated,
// so on any error or a torn tail the state still ends at a batch boundary.
type scanner struct {
	ctx  context.Context
	path string
	st   *chainState
	ra   io.ReaderAt // the stream, for exact duplicate checks
	lr   *lineReader

	pend    []pendLine
	pendEnd int64 // batch_end of the pending batch
	pendCRC uint32
	prev    [32]byte // digest of the line before the next one
	prevSet bool     // false only after a resync past an unparsable line
	// resynced is set by resync until the next line passes its rev check.
	resynced bool
	nextRev  int64 // rev the next line must hold (== its line number)

	// failEnv is the decoded faulty line when run returned a
	// *CorruptError for a line that decoded (nil otherwise); resync uses it.
	failEnv *envelope
	// onLine, when set, sees every line that passed validation (its data
	// aliases the read buffer); onCommit sees each committed batch size.
	onLine   func(env *envelope)
	onCommit func(n int)
	// evidence is how many bytes of the file are known to hold committed
	// batches (the validated-prefix cache recorded them): a tail that
	// would be torn but starts before it is damage, and a file whose
	// batches end before it lost committed events.
	evidence int64
	// resumeAt is where the bytes after the first NULs start when tailEnd
	// found damage past them (Verify resumes there: resumeAfterNULs).
	resumeAt int64
	// tail is how far past the lines' first NUL the scan reads.
	tail tailMode
}

func newScanner(ctx context.Context, path string, st *chainState, ra io.ReaderAt, lr *lineReader) *scanner {
	return &scanner{ctx: ctx, path: path, st: st, ra: ra, lr: lr, prev: st.last, prevSet: true, nextRev: st.rev + 1, pendCRC: st.crc}
}

func (s *scanner) corrupt(line int64, off int64, problem string) *CorruptError {
	return &CorruptError{Path: s.path, Line: int(line), Rev: line, Offset: off, Problem: problem}
}

// run validates lines to EOF. It returns a *CorruptError for damage that is
// not a torn last batch, an I/O or context error, or a result saying whether
// the bytes after the state's (new) end are a torn last batch.
func (s *scanner) run() (scanResult, error) {
	var res scanResult
	for n := 0; ; n++ {
		if n%4096 == 4095 && s.ctx != nil {
			if err := s.ctx.Err(); err != nil {
				return res, err
			}
		}
		line, off, terminated, err := s.lr.next()
		if err == io.EOF {
			break
		}
		lineNo := s.nextRev
		if errors.Is(err, errLineTooLong) {
			if !terminated || s.lr.atEOF() {
				return s.torn(res, lineNo, off, "last line is too long to be an event")
			}
			return res, s.corrupt(lineNo, off, "line is longer than 256 MiB")
		}
		if err != nil {
			return res, storageErr("read", s.path, err)
		}
		if !terminated {
			return s.torn(res, lineNo, off, "last line is not terminated")
		}
		s.failEnv = nil
		env, problem := decodeLine(line, true)
		if problem != "" {
			if !json.Valid(line) && s.lr.atEOF() {
				return s.torn(res, lineNo, off, "last line is not JSON")
			}
			if env.digest != ([32]byte{}) {
				s.failEnv = &env // its stored digest still links the next line
			}
			return res, s.corrupt(lineNo, off, problem)
		}
		if problem := s.check(&env, lineNo); problem != "" {
			s.failEnv = &env
			return res, s.corrupt(lineNo, off, problem)
		}
		p := pendLine{rev: env.rev, off: off, id: string(env.id), hash: idHash(env.id), digest: env.digest}
		dup, err := s.duplicate(&p)
		if err != nil {
			return res, err
		}
		if dup != 0 {
			s.failEnv = &env
			return res, s.corrupt(env.rev, off, fmt.Sprintf("duplicate event id (first used at rev %d)", dup))
		}
		if s.onLine != nil {
			s.onLine(&env)
		}
		s.pend = append(s.pend, p)
		s.pendEnd = env.batchEnd
		s.pendCRC = crc32.Update(s.pendCRC, castagnoli, line)
		s.pendCRC = crc32.Update(s.pendCRC, castagnoli, newline)
		s.prev, s.prevSet = env.digest, true
		s.nextRev++
		if env.rev == env.batchEnd {
			res.events += int64(len(s.pend))
			s.commit(off + int64(len(line)) + 1)
		}
	}
	if len(s.pend) > 0 {
		last := s.pend[len(s.pend)-1]
		return s.torn(res, last.rev+1, s.lr.off, fmt.Sprintf("batch declares revs %d..%d but only %d line(s) are present",
			s.pend[0].rev, s.pendEnd, len(s.pend)))
	}
	if res, err := s.zeroTail(res); err != nil || res.torn {
		return res, err
	}
	if s.st.size < s.evidence {
		ev := s.evidence
		s.evidence = 0 // reported once (Verify carries on after a fault)
		return res, s.corrupt(s.st.rev+1, s.st.size, fmt.Sprintf(
			"the stream ends at byte %d after rev %d, but %s recorded %d bytes as committed: committed events are missing from the end%s",
			s.st.size, s.st.rev, filepath.Base(s.path)+cacheSuffix, ev, s.restoredAdvice()))
	}
	return res, nil
}

var newline = []byte{'\n'}

// restoredAdvice is the parenthesis a committed-evidence fault ends with:
// what to do when events.jsonl was put back from a backup on purpose. It
// names the index by its path and says to move it aside, never to remove a
// file, so it cannot be read as advice to delete events.jsonl, the record.
func (s *scanner) restoredAdvice() string {
	idx := s.path + cacheSuffix
	return fmt.Sprintf(" (only if events.jsonl was restored from a backup on purpose: move the index aside, mv %s %s, "+
		"and the next open rebuilds it)", shellquote.Quote(idx), shellquote.Quote(idx+".bad"))
}

// torn reports the bytes after the last complete batch as a torn write —
// unless they start before the evidence of what was committed: then the
// line at lineNo (offset off), where the tear shows, is damage.
func (s *scanner) torn(res scanResult, lineNo, off int64, why string) (scanResult, error) {
	end, err := s.tailEnd(lineNo, off)
	if err != nil {
		return res, err
	}
	return s.tornTo(res, lineNo, off, end, why)
}

// tornTo is torn once the end of the torn bytes is known.
func (s *scanner) tornTo(res scanResult, lineNo, off, end int64, why string) (scanResult, error) {
	if s.st.size < s.evidence {
		ev := s.evidence
		s.evidence = 0 // reported once (Verify carries on after a fault)
		return res, s.corrupt(lineNo, off, fmt.Sprintf(
			"%s, but %s recorded the stream as committed up to byte %d: a committed event was damaged, this is not a torn write%s",
			why, filepath.Base(s.path)+cacheSuffix, ev, s.restoredAdvice()))
	}
	res.torn, res.why, res.tornEnd = true, why, end
	return res, nil
}

// check validates a decoded line against its position in the stream.
// The first line after a resync (Verify) whose rev is ahead of its
// position is taken as where the numbering resumes, its prev unchecked:
// the faulty line swallowed line feeds (a zeroed sector, a line feed
// overwritten), which is one fault, already reported, not one per later
// line.
func (s *scanner) check(env *envelope, lineNo int64) string {
	swallowed := false
	if env.rev != lineNo {
		if !s.resynced || env.rev < lineNo {
			return fmt.Sprintf("rev is %d, want %d (revisions must be contiguous from 1)", env.rev, lineNo)
		}
		s.nextRev, swallowed = env.rev, true
	}
	s.resynced = false
	switch {
	case env.rev == 1:
		if len(env.prev) != 0 {
			return `rev 1 must have prev ""`
		}
	case !s.prevSet || swallowed:
		// After a resync past an unparsable line there is nothing to compare.
	default:
		sum, _ := parseDigest(env.prev)
		if len(env.prev) == 0 || sum != s.prev {
			return fmt.Sprintf("prev does not match the digest of rev %d (that event or this one was altered, or events were removed or reordered)", env.rev-1)
		}
	}
	if len(s.pend) > 0 && env.batchEnd != s.pendEnd {
		return fmt.Sprintf("batch_end is %d but the batch that started at rev %d declares %d", env.batchEnd, s.pend[0].rev, s.pendEnd)
	}
	return ""
}

// duplicate returns the rev that already uses p.id (0 if none), checking
// the pending batch and the committed ids. On a hash collision with a
// different id it fills p.collideID/collideRev.
func (s *scanner) duplicate(p *pendLine) (int64, error) {
	for _, q := range s.pend {
		if q.hash == p.hash && q.id == p.id {
			return q.rev, nil
		}
	}
	return s.st.lookupDuplicate(s.ra, p)
}

// lookupDuplicate checks p.id against the committed ids, reading the
// earlier line only on a hash hit.
func (st *chainState) lookupDuplicate(ra io.ReaderAt, p *pendLine) (int64, error) {
	if st.byID != nil {
		return st.byID[p.id], nil
	}
	if err := st.ensureIDs(ra); err != nil {
		return 0, err
	}
	if r, ok := st.exact[p.id]; ok {
		return r, nil
	}
	r, ok := st.ids[p.hash]
	if !ok {
		return 0, nil
	}
	other, err := st.readID(ra, r)
	if err != nil {
		return 0, err
	}
	if other == p.id {
		return r, nil
	}
	p.collideID, p.collideRev = other, r
	return 0, nil
}

// commit moves the pending batch into the state; end is the offset just past
// its last line.
func (s *scanner) commit(end int64) {
	st := s.st
	st.addLines(s.pend)
	last := s.pend[len(s.pend)-1]
	st.rev, st.size, st.last, st.lastLine, st.crc = last.rev, end, last.digest, last.off, s.pendCRC
	if s.onCommit != nil {
		s.onCommit(len(s.pend))
	}
	s.pend = s.pend[:0]
}

// resync continues a scan after a *CorruptError (Verify reports every
// fault, not only the first): the faulty line and any unfinished batch
// before it are dropped, and the next line is checked against the faulty
// line's stored digest when it decoded.
func (s *scanner) resync(lineNo int64) {
	s.pend = s.pend[:0]
	s.st.rev = lineNo
	s.st.size = s.lr.off
	s.nextRev = lineNo + 1
	s.resynced = true
	if s.failEnv != nil {
		s.prev, s.prevSet = s.failEnv.digest, true
	} else {
		s.prevSet = false
	}
	s.failEnv = nil
}

// addLines indexes committed lines. Duplicates were refused before, so a
// taken hash means a different id with the same hash: both go to exact.
func (st *chainState) addLines(lines []pendLine) {
	for i, p := range lines {
		if (p.rev-1)%indexEvery == 0 {
			st.offsets = append(st.offsets, p.off)
		}
		if st.byID != nil {
			st.byID[p.id] = p.rev
			continue
		}
		st.idHashes = append(st.idHashes, p.hash)
		if st.ids == nil {
			continue // indexed from idHashes when first needed
		}
		r0, taken := st.ids[p.hash]
		if !taken {
			st.ids[p.hash] = p.rev
			continue
		}
		other := p.collideID
		if p.collideRev != r0 {
			for _, q := range lines[:i] {
				if q.rev == r0 {
					other = q.id
				}
			}
		}
		if st.exact == nil {
			st.exact = map[string]int64{}
		}
		if _, ok := st.exact[other]; !ok {
			st.exact[other] = r0
		}
		st.exact[p.id] = p.rev
	}
}
