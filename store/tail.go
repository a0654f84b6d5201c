package store

import (
	"context"
	"errors"
	"fmt"
	"io"
)

// The zero tail (docs/architecture.md, "The zero tail"). A writer keeps a
// zero-filled region past the last line of events.jsonl and writes each
// batch over it with pwrite(2) at the committed end, so that the batch's
// fdatasync(2) changes no file size: on ext4 that spares a journal commit
// per batch (about a third of an append's cost on the disk measured in
// docs/decisions.md). The first NUL byte after the lines ends them; every
// reader goes by that logical end, never by the file's size.

// tailChunk is how many bytes past the next batch a writer zero-fills when
// the zero tail has no room for it (docs/decisions.md, "A zero-filled
// record tail"): about 2,600 events of 400 bytes per fill.
const tailChunk = 1 << 20

// tailRoomFactor is how many times the fill the file system must have
// free for a writer to fill: on a device with less room left (64 MiB for
// a 1 MiB fill) the tail is not filled, so that the event that does not
// fit fails with STORAGE_FULL where it would without a tail (not a MiB
// of events later) and the room is left to artifacts and other runs.
const tailRoomFactor = 64

// zeros is read-only NULs, written to fill the tail and compared against
// to skip it.
var zeros [256 << 10]byte

// moreAtEnd reports whether the file changed at the committed end: a
// byte other than NUL follows it (lines another handle or process
// appended, or a torn write), or the file no longer reaches it (it was
// shortened, which scanTail reports as damage). It reads the last
// committed byte and the one after it; the file's size says nothing, as
// appends over the zero tail do not change it. The caller holds mu.
func (s *stream) moreAtEnd() (bool, error) {
	more, _, err := s.atEnd()
	return more, err
}

// atEnd is moreAtEnd that also reports, when nothing changed, whether
// the file ends exactly at the committed end (ends) rather than going on
// in NULs: the one read tells an appender both, so it needs no fstat(2)
// to learn the file's size (commit). The last committed byte must still
// be its line's line feed: when it is not (a disk that zeroed the last
// acknowledged batch, an edit), a *CorruptError naming that line, so
// that no writer appends past a line that is gone and no reader takes
// the shorter stream for the record. The caller holds mu.
func (s *stream) atEnd() (more, ends bool, err error) {
	var b [2]byte
	at, want := s.st.size-1, 2
	if at < 0 {
		at, want = 0, 1 // an empty stream has no last byte
	}
	n, err := s.f.ReadAt(b[2-want:], at)
	if want == 2 && n >= 1 && b[0] != '\n' {
		return false, false, s.lastLineChanged(b[0])
	}
	switch {
	case n == want:
		return b[1] != 0, false, nil
	case n == want-1:
		return false, true, nil // the file ends at the committed end
	case err == nil || errors.Is(err, io.EOF):
		return true, false, nil // shortened below the committed end
	}
	return false, false, storageErr("read", s.path, err)
}

// lastLineChanged is the *CorruptError of a committed last line whose
// line feed is now the byte got.
func (s *stream) lastLineChanged(got byte) error {
	st := s.st
	return &CorruptError{Path: s.path, Line: int(st.rev), Rev: st.rev, Offset: st.lastLine,
		Problem: fmt.Sprintf("byte %d, the line feed that ended this committed event, is now 0x%02x: the event was changed after it was written (a disk that zeroed acknowledged data, or an edit)", st.size-1, got)}
}

// makeRoom makes sure the zero tail past the committed end holds n bytes,
// the next batch, zero-filling tailChunk bytes more when it does not; size
// is the file's size as the caller knows it, and makeRoom returns the
// size after it. The size an appender knows can be larger than the file's
// only when someone cut into the zero tail by hand (commit); the batch
// then extends the file as a plain append would, and a fill asks the file
// system for the size first, so it never leaves a hole. On a file system
// with less than tailRoomFactor times the fill free it does not fill
// (checked once per fill, not per batch), and the batch is a plain
// append. A fill that fails (ENOSPC, EIO, a file system that refuses) is
// truncated away where it can be and otherwise ignored: the batch is then
// written as a plain append that extends the file, and no fill is tried
// again until the record has grown by another tailChunk, so a full disk
// does not cost a failed fill per batch. The zeros are made durable by
// the batch's fdatasync. The caller holds mu and the exclusive flock.
func (s *stream) makeRoom(size int64, n int) int64 {
	end := s.st.size
	if size-end >= int64(n) || end < s.noFillUntil {
		return size
	}
	if fs, err := s.fileSize(); err == nil {
		size = fs
	}
	from := max(size, end)
	to := (end + int64(n) + tailChunk + 4095) &^ 4095
	if free, known := freeBytes(s.f); known && free < tailRoomFactor*(to-from) {
		s.noFillUntil = end + tailChunk
		return size
	}
	if err := writeZeros(s.f, from, to); err != nil {
		if s.f.Truncate(from) != nil {
			return 0 // unknown: the next batch asks
		}
		s.noFillUntil = end + tailChunk
		return from
	}
	return to
}

// writeZeros writes NULs over [from, to) of f.
func writeZeros(f File, from, to int64) error {
	for off := from; off < to; {
		k := min(int64(len(zeros)), to-off)
		if _, err := f.WriteAt(zeros[:k], off); err != nil {
			return err
		}
		off += k
	}
	return nil
}

// lastWriter reports whether a closing handle should trim: when it holds
// the writer mark, whether it can take the mark exclusive, that is, no
// other writable handle — of this process or another — has the file open
// (one that has would be using the zero tail, or will make its own and
// trim it when it closes); a handle that did not append trims too then,
// so that the last writer to close leaves plain JSON Lines even when an
// earlier one's tail is left. Writers closing at the same moment each
// see the others' marks, so one refused gives its own mark up and asks
// once more: of those, the last to give its mark up finds none left (or
// one that took it and trims), so one of them trims. Without the mark (a
// file system that has none) a handle trims when it appended, as it did
// before the mark. The caller holds mu.
func (s *stream) lastWriter() bool {
	if !s.marked {
		return s.appended
	}
	if s.f.WriterLock(true, false) == nil {
		return true
	}
	return s.f.WriterUnlock() == nil && s.f.WriterLock(true, false) == nil
}

// trim cuts the zero tail off the file of a writer that closes, so that a
// finished run's events.jsonl is plain JSON Lines: under the exclusive
// flock it picks up what other handles appended, then truncates the file
// to the committed end and fdatasyncs it. A torn write past the end is
// left for recovery, and failures are ignored: a zero tail is part of the
// format, never damage. The caller holds mu.
func (s *stream) trim() {
	if s.f.Lock(true, true) != nil {
		return
	}
	defer s.f.Unlock()
	size, err := s.fileSize()
	if err != nil || size == s.st.size {
		return
	}
	more, err := s.moreAtEnd()
	if err != nil {
		return
	}
	if more {
		res, err := s.scanTail(context.Background(), size, tailPeek)
		if err != nil || res.torn {
			return
		}
	}
	if s.f.Truncate(s.st.size) == nil {
		_ = s.f.Datasync()
	}
}
