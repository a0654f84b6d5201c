package store

import (
	"errors"
	"fmt"
	"io"
)

// The scanner's side of the zero tail (tail.go): what a torn overwrite of
// it can leave past its first NUL, and what only damage leaves.

// zeroTail examines the zero tail after the last complete batch when the
// lines ended at a NUL and the scan reads the whole tail (wholeTail): all
// NULs, or what a torn write left in it, which it reports as torn (up to
// its last byte that is not NUL); anything else is a *CorruptError
// (tailEnd).
func (s *scanner) zeroTail(res scanResult) (scanResult, error) {
	if !s.lr.nul || !s.wholeTail {
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
// line reader's offset, or, when the lines ended at a NUL, past the last
// byte that is not NUL. Past a NUL a torn overwrite of the zero tail can
// leave the sectors of its batch that reached the disk between ones that
// did not (simfs.SectorSize), but nothing else: the NULs between them
// must end on a sector boundary, and every whole line past them that
// decodes must be a later line of the same batch (a rev the scan has not
// reached, the torn batch's batch_end). Anything else is damage: a
// *CorruptError naming line lineNo at offset off.
func (s *scanner) tailEnd(lineNo, off int64) (int64, error) {
	lr := s.lr
	end := lr.off
	if !lr.nul {
		return end, nil
	}
	batchEnd := int64(0)
	if len(s.pend) > 0 {
		batchEnd = s.pendEnd
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
		if at > from && at%sectorSize != 0 {
			return 0, s.corrupt(lineNo, off, fmt.Sprintf("byte %d follows NUL bytes that end inside a %d-byte sector: damage, not a torn write", at, sectorSize))
		}
		line, loff, terminated, err := lr.next()
		switch {
		case errors.Is(err, errLineTooLong):
			return 0, s.corrupt(lineNo, off, fmt.Sprintf("a line longer than 256 MiB at byte %d follows NUL bytes", loff))
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
			return 0, s.corrupt(lineNo, off, fmt.Sprintf(
				"the event at byte %d (rev %d, batch_end %d) follows NUL bytes but is not a later line of the batch torn at rev %d: damage, not a torn write",
				loff, env.rev, env.batchEnd, s.nextRev))
		}
	}
}

// sectorSize is the unit a disk writes whole: a torn write leaves old
// bytes in whole sectors.
const sectorSize = 512
