package store

import (
	"errors"
	"fmt"
	"io"
	"math"
)

// The scanner's side of the zero tail (tail.go): what a torn overwrite of
// it can leave past its first NUL, and what only damage leaves.

// tailMode is how far a scan reads past the first NUL that ends the
// lines: into the zero tail, where a torn overwrite can leave bytes.
type tailMode int

const (
	// tailPeek stops at the first NUL: a handle picking up another's
	// appends (refresh, trim) needs the complete batches only, and a torn
	// line there is a write in progress or a dead writer's, which an open
	// recovers.
	tailPeek tailMode = iota
	// tailCut reads past the NULs after a torn line, to move aside all
	// its bytes: a writer that recovers it (commit).
	tailCut
	// tailWhole reads the whole zero tail even after complete batches, to
	// find what a torn write left past NULs (an open, Verify).
	tailWhole
)

// zeroTail examines the zero tail after the last complete batch when the
// lines ended at a NUL and the scan reads the whole tail (tailWhole): all
// NULs, or what a torn write left in it, which it reports as torn (up to
// its last byte that is not NUL); anything else is a *CorruptError
// (tailEnd).
func (s *scanner) zeroTail(res scanResult) (scanResult, error) {
	if !s.lr.nul || s.tail != tailWhole {
		return res, nil
	}
	at := s.lr.off
	end, err := s.tailEnd(s.nextRev, at)
	if err != nil || end == at {
		return res, err
	}
	return s.tornTo(res, s.nextRev, at, end, "bytes other than NUL follow the zero tail's first NUL")
}

// tailEnd returns the offset just past the bytes a torn write left: the
// line reader's offset, or, when the lines ended at a NUL and the scan
// reads past it (not tailPeek), past the last byte that is not NUL. Past a NUL a torn overwrite of the zero tail can
// leave the sectors of its batch that reached the disk between ones that
// did not (simfs.SectorSize), but nothing else: the NULs between them
// must end on a sector boundary, and every whole line past them that
// decodes must be a later line of the same batch (a rev the scan has not
// reached, the torn batch's batch_end). Anything else is damage: a
// *CorruptError naming line lineNo at offset off.
func (s *scanner) tailEnd(lineNo, off int64) (int64, error) {
	lr := s.lr
	end := lr.off
	if !lr.nul || s.tail == tailPeek {
		return end, nil
	}
	batchEnd := int64(0)
	if len(s.pend) > 0 {
		batchEnd = s.pendEnd
	}
	resume := int64(0) // where the bytes after the first NULs start
	damage := func(problem string) (int64, error) {
		s.resumeAt = resume
		return 0, s.corrupt(lineNo, off, problem)
	}
	for {
		from := lr.off
		at, err := lr.skipNULs()
		if err == io.EOF {
			return end, nil
		}
		if err != nil {
			return 0, storageErr("read", s.path, err)
		}
		if resume == 0 {
			resume = at
		}
		if at > from && at%sectorSize != 0 {
			return damage(fmt.Sprintf("byte %d follows NUL bytes that end inside a %d-byte sector: damage, not a torn write", at, sectorSize))
		}
		line, loff, terminated, err := lr.next()
		switch {
		case errors.Is(err, errLineTooLong):
			return damage(fmt.Sprintf("a line longer than 256 MiB at byte %d follows NUL bytes", loff))
		case err != nil:
			return 0, storageErr("read", s.path, err)
		}
		end = loff + int64(len(line))
		if !terminated {
			continue
		}
		end++
		env, problem := decodeLine(line, false)
		if problem != "" {
			continue // a fragment of a torn line
		}
		if batchEnd == 0 {
			batchEnd = env.batchEnd
		}
		if env.rev < s.nextRev || env.batchEnd != batchEnd || env.rev > env.batchEnd {
			return damage(fmt.Sprintf(
				"the event at byte %d (rev %d, batch_end %d) follows NUL bytes but is not a later line of the batch torn at rev %d: damage, not a torn write",
				loff, env.rev, env.batchEnd, s.nextRev))
		}
	}
}

// resumeAfterNULs moves a Verify scan whose zero-tail check found damage
// (tailEnd) back to where the bytes after the first NULs start, so the
// lines tailEnd read past them are checked too; the rest of a line the
// NULs cut is skipped, as part of the fault already reported. It returns
// false when there is nothing to resume from (ra nil, or no such damage).
func (s *scanner) resumeAfterNULs(ra io.ReaderAt) bool {
	at := s.resumeAt
	s.resumeAt = 0
	if at == 0 || ra == nil {
		return false
	}
	open := func() *lineReader { return newLineReader(io.NewSectionReader(ra, at, math.MaxInt64-at), at, 256<<10) }
	s.lr = open()
	if line, _, terminated, err := s.lr.next(); err == nil && terminated {
		if _, problem := decodeLine(line, false); problem == "" {
			s.lr = open() // the NULs ended where a line starts
		}
	}
	return true
}

// sectorSize is the unit a disk writes whole: a torn write leaves old
// bytes in whole sectors.
const sectorSize = 512
