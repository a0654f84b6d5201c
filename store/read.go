package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// Read is Run.Read.
func (s *stream) Read(ctx context.Context, fromRev int64, fn func(Event) error) error {
	if err := s.refresh(ctx); err != nil {
		return err
	}
	return s.readRange(ctx, s.pub.Load(), fromRev, fn)
}

func (s *stream) readRange(ctx context.Context, pub *published, from int64, fn func(Event) error) error {
	n := 0
	return readCommitted(s.f, s.path, pub.offsets, pub.size, from, pub.rev, func(env *envelope) error {
		if n++; n%256 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		return fn(env.event())
	})
}

// Follow is Run.Follow.
func (s *stream) Follow(ctx context.Context, fromRev int64, fn func(Event) error) error {
	next := max(fromRev, 1)
	t := time.NewTicker(followPoll)
	defer t.Stop()
	idle := 0
	for {
		changed := s.pub.Load().next
		if err := s.refresh(ctx); err != nil {
			return err
		}
		pub := s.pub.Load()
		if pub.rev >= next {
			if err := s.readRange(ctx, pub, next, fn); err != nil {
				return err
			}
			next = pub.rev + 1
			continue
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-changed:
		case <-t.C:
			if idle++; idle%followPresentEvery == 0 {
				if err := s.present(); err != nil {
					return err
				}
			}
		}
	}
}

// followPresentEvery is how many idle polls of Follow pass between its
// checks that the file is still there (present): about one a second.
const followPresentEvery = int(time.Second / followPoll)

// present is Run.Present.
func (s *stream) present() error {
	dir := filepath.Dir(s.path)
	fi, err := s.fsys.Stat(s.path)
	switch {
	case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
		return fmt.Errorf("%w: %s: its %s was removed while it was read", ErrRunNotFound, dir, eventsFile)
	case err != nil:
		return storageErr("stat", s.path, err)
	}
	if _, isOS := s.fsys.(osFS); !isOS {
		return nil
	}
	of, err := s.f.Stat()
	if err != nil {
		return storageErr("stat", s.path, err)
	}
	if !os.SameFile(fi, of) {
		return fmt.Errorf("%w: %s: its %s was replaced by another file while it was read (the run was removed and one of the same id made)", ErrRunNotFound, dir, eventsFile)
	}
	return nil
}

// close closes the stream, saving the validated-prefix cache if this
// handle appended and cutting off the zero tail if it is the last writer
// (lastWriter). An Append waiting for the stream fails with ErrClosed.
func (s *stream) close() error {
	if s.closed.Swap(true) {
		return nil
	}
	s.mu <- struct{}{}
	defer s.unlock()
	close(s.pub.Load().next) // wakes followers, which then see ErrClosed
	if s.failed == nil && !s.ro {
		if s.appended {
			s.saveCache()
		}
		if s.lastWriter() {
			s.trim()
		}
	}
	return s.f.Close()
}

// readID reads the id of committed rev r from the stream.
func (st *chainState) readID(ra io.ReaderAt, r int64) (string, error) {
	var id string
	err := readCommitted(ra, "", st.offsets, st.size, r, r, func(env *envelope) error {
		id = string(env.id)
		return nil
	})
	return id, err
}

// readCommitted decodes the committed lines from..to (inclusive) of a
// stream whose offset index and committed size are given, and calls fn for
// each. It checks each line's digest and the chain links between the lines
// it reads, not the canonical form of data (checked when the line was
// validated: any later change to the bytes changes the digest).
func readCommitted(ra io.ReaderAt, path string, offsets []int64, size int64, from, to int64, fn func(*envelope) error) error {
	if from < 1 {
		from = 1
	}
	if to < from {
		return nil
	}
	var off, at int64 = 0, 1
	if len(offsets) > 0 {
		i := (from - 1) / indexEvery
		if i >= int64(len(offsets)) {
			i = int64(len(offsets)) - 1
		}
		off, at = offsets[i], i*indexEvery+1
	}
	lr := newLineReader(io.NewSectionReader(ra, off, size-off), off, 64<<10)
	var prev [32]byte
	havePrev := false
	for rev := at; rev <= to; rev++ {
		line, loff, terminated, err := lr.next()
		if err == io.EOF || (err == nil && !terminated) {
			return &CorruptError{Path: path, Line: int(rev), Rev: rev, Offset: loff, Problem: "committed event is missing (the file was shortened)"}
		}
		if errors.Is(err, errLineTooLong) {
			return &CorruptError{Path: path, Line: int(rev), Rev: rev, Offset: loff, Problem: "line is longer than 256 MiB"}
		}
		if err != nil {
			return storageErr("read", path, err)
		}
		env, problem := decodeLine(line, false)
		if problem == "" && env.rev != rev {
			problem = fmt.Sprintf("rev is %d, want %d", env.rev, rev)
		}
		if problem == "" && havePrev {
			if sum, _ := parseDigest(env.prev); sum != prev {
				problem = fmt.Sprintf("prev does not match the digest of rev %d", rev-1)
			}
		}
		if problem != "" {
			return &CorruptError{Path: path, Line: int(rev), Rev: rev, Offset: loff, Problem: problem + " (changed since it was validated)"}
		}
		prev, havePrev = env.digest, true
		if rev >= from {
			if err := fn(&env); err != nil {
				return err
			}
		}
	}
	return nil
}
