package stream

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/obversa/obversa/internal/regfile"
)

// Read calls fn for every line of the run's stream in dir, oldest first
// (stream.jsonl.1, then stream.jsonl), and returns. A stream that does not
// exist yet has no lines. Lines that do not parse (a worker killed in the
// middle of one) are skipped; an unfinished last line is left for later.
// It stops at fn's first error and returns it, or at the first read error.
func Read(ctx context.Context, dir string, fn func(Line) error) error {
	t := &tailer{dir: dir, fn: fn}
	if err := t.readOld(); err != nil {
		return err
	}
	if err := t.open(); err != nil || t.f == nil {
		return err
	}
	defer t.f.Close()
	return t.drain(ctx)
}

// Follow is Read that carries on: it calls fn for each line as it is
// written, every FlushInterval, across rotations, until ctx ends (it then
// returns nil) or fn fails.
func Follow(ctx context.Context, dir string, fn func(Line) error) error {
	return FollowUntil(ctx, dir, nil, fn)
}

// FollowUntil is Follow that also ends, returning nil, once ended is
// closed and the lines written until then are passed on: the caller
// closes it once the run has ended and its writers are gone, so nothing
// more is written. A nil ended never closes.
func FollowUntil(ctx context.Context, dir string, ended <-chan struct{}, fn func(Line) error) error {
	t := &tailer{dir: dir, fn: fn}
	if err := t.readOld(); err != nil {
		return err
	}
	defer func() {
		if t.f != nil {
			t.f.Close()
		}
	}()
	tick := time.NewTicker(FlushInterval)
	defer tick.Stop()
	last := false
	for {
		if t.f == nil {
			if err := t.open(); err != nil {
				return err
			}
		}
		if t.f != nil {
			if err := t.drain(ctx); err != nil {
				return err
			}
			rotated, err := t.rotated()
			if err != nil {
				return err
			}
			if rotated {
				// The segment was renamed: finish it, then start on the
				// new one.
				if err := t.drain(ctx); err != nil {
					return err
				}
				t.f.Close()
				t.f, t.partial = nil, nil
				continue
			}
		}
		if last {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-ended:
			// One more pass reads what was flushed before the end.
			last, ended = true, nil
		case <-tick.C:
		}
	}
}

// tailer reads a stream's segments line by line.
type tailer struct {
	dir     string
	fn      func(Line) error
	f       *os.File
	partial []byte // an unfinished last line
	buf     []byte
}

func (t *tailer) readOld() error {
	f, err := regfile.OpenFile(filepath.Join(t.dir, OldFileName), os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	old := &tailer{fn: t.fn, f: f}
	return old.drain(context.Background())
}

// open opens the current segment; t.f stays nil when there is none yet.
func (t *tailer) open() error {
	f, err := regfile.OpenFile(filepath.Join(t.dir, FileName), os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	t.f = f
	return nil
}

// drain reads t.f to its current end, calling fn for each whole line.
func (t *tailer) drain(ctx context.Context) error {
	if t.buf == nil {
		t.buf = make([]byte, 64<<10)
	}
	for {
		if err := ctx.Err(); err != nil {
			return nil
		}
		n, err := t.f.Read(t.buf)
		if n > 0 {
			if ferr := t.lines(t.buf[:n]); ferr != nil {
				return ferr
			}
		}
		if err == io.EOF || n == 0 {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// lines hands each whole line of p (after what was left over) to fn.
func (t *tailer) lines(p []byte) error {
	t.partial = append(t.partial, p...)
	rest := t.partial
	for {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			break
		}
		line := rest[:i]
		rest = rest[i+1:]
		l, err := Parse(line)
		if err != nil {
			continue
		}
		if err := t.fn(l); err != nil {
			t.partial = append(t.partial[:0], rest...)
			return err
		}
	}
	t.partial = append(t.partial[:0], rest...)
	return nil
}

// rotated reports whether the current segment's name now names another
// file than the one t.f reads.
func (t *tailer) rotated() (bool, error) {
	st, err := os.Stat(filepath.Join(t.dir, FileName))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	cur, err := t.f.Stat()
	if err != nil {
		return false, err
	}
	return !os.SameFile(st, cur), nil
}
