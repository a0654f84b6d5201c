package store

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// statFS is the operating system's file system counting fstat(2) calls
// on open events.jsonl files.
type statFS struct {
	FS
	stats atomic.Int64
}

func (s *statFS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	f, err := s.FS.OpenFile(name, flag, perm)
	if err != nil || filepath.Base(name) != eventsFile {
		return f, err
	}
	return &statFile{File: f, n: &s.stats}, nil
}

type statFile struct {
	File
	n *atomic.Int64
}

func (f *statFile) Stat() (fs.FileInfo, error) {
	f.n.Add(1)
	return f.File.Stat()
}

// newStatRun creates an owned run on a statFS.
func newStatRun(t *testing.T) (*statFS, *Run) {
	t.Helper()
	ctx := context.Background()
	fsys := &statFS{FS: OS()}
	st, err := Open(t.TempDir(), "test", WithFS(fsys))
	if err != nil {
		t.Fatal(err)
	}
	rec, err := st.CreateRun(ctx, "run-1", Policy{})
	if err != nil {
		t.Fatal(err)
	}
	r := rec.(*Run)
	t.Cleanup(func() { r.Close() })
	own, err := r.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { own.Release() })
	return fsys, r
}

// TestAppendKnowsItsFileSize: a writer appending over its zero tail learns
// the file's size from its own fills and writes, not from an fstat(2) per
// batch: one read of the bytes at its committed end tells it whether
// anything changed there (docs/decisions.md, "An append asks the file
// system for no size").
func TestAppendKnowsItsFileSize(t *testing.T) {
	t.Parallel()
	fsys, r := newStatRun(t)
	mustAppend(t, r.events, 0, NewEvent{Type: "t", Data: "first"}) // the first fill
	before := fsys.stats.Load()
	const batches = 50
	for i := 1; i <= batches; i++ {
		mustAppend(t, r.events, int64(i), NewEvent{Type: "t", Data: strings.Repeat("x", 100)})
	}
	if n := fsys.stats.Load() - before; n > 0 {
		t.Fatalf("%d appends inside one zero fill took %d fstat calls, want none", batches, n)
	}
}

// TestAppendAfterTailCutByHand: a zero tail cut short behind a writer's
// back (truncate(1) into it, or to the committed end) loses nothing: the
// writer's next batches extend the file as plain appends, its next fill
// starts at the file's real end (no hole), and every event reads back and
// verifies.
func TestAppendAfterTailCutByHand(t *testing.T) {
	t.Parallel()
	for _, into := range []int64{0, 1, 300} {
		t.Run(fmt.Sprintf("cut %d bytes past the end", into), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			_, r := newStatRun(t)
			path := eventsPath(r)
			rev := mustAppend(t, r.events, 0, NewEvent{Type: "t", Data: "first"})
			if err := os.Truncate(path, r.events.st.size+into); err != nil {
				t.Fatal(err)
			}
			// Enough bytes to pass the cut, the tail the writer thought it
			// had, and a fill after it.
			big := strings.Repeat("y", 64<<10)
			for range tailChunk/len(big) + 8 {
				rev = mustAppend(t, r.events, rev, NewEvent{Type: "t", Data: big})
			}
			lines := readEvents(t, path)
			if int64(len(lines)) != r.events.st.size {
				t.Fatalf("the file holds %d bytes of lines, the writer committed %d", len(lines), r.events.st.size)
			}
			if bytes.Count(lines, []byte("\n")) != int(rev) {
				t.Fatalf("%d lines, want %d", bytes.Count(lines, []byte("\n")), rev)
			}
			checkNoHole(t, path)
			if err := r.Close(); err != nil {
				t.Fatal(err)
			}
			rep, err := Verify(ctx, r.Dir())
			if err != nil || rep.Events != rev || rep.TornBytes != 0 {
				t.Fatalf("verify: %+v, %v; want %d events, nothing torn", rep, err, rev)
			}
			fi, err := os.Stat(path)
			if err != nil || fi.Size() != int64(len(lines)) {
				t.Fatalf("the closed run's file: %v, %v; want its %d bytes of lines", fi.Size(), err, len(lines))
			}
		})
	}
}

// TestAppendAfterOtherHandleClosed: a writer whose size of the file comes
// from its own fills (TestAppendKnowsItsFileSize) loses nothing when
// another handle appends and closes in between, cutting the zero tail to
// its last line, or closes having appended nothing: the writer's next
// batches read back, verify and leave no hole.
func TestAppendAfterOtherHandleClosed(t *testing.T) {
	t.Parallel()
	for _, otherAppends := range []bool{true, false} {
		t.Run(fmt.Sprintf("other appends %v", otherAppends), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			a := newTestRun(t, Policy{})
			rev := mustAppend(t, a.events, 0, NewEvent{Type: "t", Data: "first"}) // a fills
			b, err := OpenRunDir(ctx, a.Dir(), Policy{})
			if err != nil {
				t.Fatal(err)
			}
			if otherAppends {
				rev = mustAppend(t, b.events, rev, NewEvent{Type: "t", Data: "from b"})
			}
			if err := b.Close(); err != nil {
				t.Fatal(err)
			}
			big := strings.Repeat("z", 64<<10)
			for range tailChunk/len(big) + 8 {
				rev = mustAppend(t, a.events, rev, NewEvent{Type: "t", Data: big})
			}
			lines := readEvents(t, eventsPath(a))
			if int64(len(lines)) != a.events.st.size || bytes.Count(lines, []byte("\n")) != int(rev) {
				t.Fatalf("%d bytes in %d lines; the writer committed %d bytes, %d events", len(lines), bytes.Count(lines, []byte("\n")), a.events.st.size, rev)
			}
			checkNoHole(t, eventsPath(a))
			if err := a.Close(); err != nil {
				t.Fatal(err)
			}
			if rep, err := Verify(ctx, a.Dir()); err != nil || rep.Events != rev || rep.TornBytes != 0 {
				t.Fatalf("verify: %+v, %v; want %d events, nothing torn", rep, err, rev)
			}
		})
	}
}
