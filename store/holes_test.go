package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// boundedFile is a file that refuses to read more than limit bytes in
// all: a reader that reads the NULs of a hole instead of skipping it
// fails, quickly, instead of taking minutes.
type boundedFile struct {
	*os.File
	read, limit int64
}

func (b *boundedFile) ReadAt(p []byte, off int64) (int, error) {
	if b.read += int64(len(p)); b.read > b.limit {
		return 0, fmt.Errorf("read %d bytes of a file of %d data bytes: the hole was read, not skipped", b.read, b.limit)
	}
	return b.File.ReadAt(p, off)
}

// TestSparseTailSkipped: a huge hole past a record's last line (truncate
// -s 1T on a finished run) is skipped, not read: the line reader's scan
// of the NULs past the lines ends at once, and opens, Verify and a
// writer's append and trim see the same events as without it; nothing is
// lost. Data past the hole is still read and judged as before: a line
// that is not the torn batch's is damage.
func TestSparseTailSkipped(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("SEEK_DATA is used on Linux only")
	}
	t.Parallel()
	ctx := context.Background()
	good, _ := twelveInThrees(t)
	const hole = 1 << 40

	dir := filepath.Join(t.TempDir(), "run")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, eventsFile)
	writeFile(t, path, good)
	if err := os.Truncate(path, int64(len(good))+hole); err != nil {
		t.Skipf("this file system cannot hold a sparse file of 1 TiB: %v", err)
	}

	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	bf := &boundedFile{File: f, limit: 4 << 20}
	lr := newLineReader(io.NewSectionReader(bf, 0, int64(len(good))+hole), 0, 64<<10)
	for {
		if _, _, _, err := lr.next(); err != nil {
			break
		}
	}
	if !lr.nul {
		t.Fatal("the lines did not end at a NUL")
	}
	if _, err := lr.skipNULs(); !errors.Is(err, io.EOF) {
		t.Fatalf("skipNULs over a 1 TiB hole: %v, want io.EOF without reading it", err)
	}

	r, err := OpenRunDirReadOnly(ctx, dir)
	if err != nil {
		t.Fatalf("read-only open: %v", err)
	}
	if r.Rev() != 12 {
		t.Errorf("read-only open: rev %d, want 12", r.Rev())
	}
	r.Close()
	if rep, err := Verify(ctx, dir); err != nil || len(rep.Faults) != 0 {
		t.Fatalf("Verify: %v %+v", err, rep)
	}
	w, err := OpenRunDir(ctx, dir, Policy{})
	if err != nil {
		t.Fatalf("open for writing: %v", err)
	}
	mustAppend(t, w.events, 12, NewEvent{Type: "t", Data: 12})
	w.Close()
	if fi, err := os.Stat(path); err != nil || fi.Size() > int64(len(good))+4096 {
		t.Fatalf("after a writer closed: %v, size %d; want the hole trimmed to the logical end", err, fi.Size())
	}
	after := readBytes(t, path)
	if string(after[:len(good)]) != string(good) {
		t.Fatal("the committed events changed")
	}

	// A line past a hole, at a sector boundary, is not the torn batch's:
	// damage, found past the hole as it is past written NULs.
	end := int64(len(after))
	if err := os.Truncate(path, end+hole); err != nil {
		t.Fatal(err)
	}
	g, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.WriteAt(good[:bytes.IndexByte(good, '\n')+1], end+hole); err != nil {
		t.Fatal(err)
	}
	g.Close()
	if _, err := OpenRunDirReadOnly(ctx, dir); !errors.Is(err, ErrCorruptEventStream) {
		t.Errorf("open with an old line past a hole: %v, want CORRUPT_EVENT_STREAM", err)
	}
}
