package store

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// TestAppendOverwritesZeroTail: a writer's appends overwrite a zero tail
// (the file's size stays put), other handles notice them by reading at
// their committed end, and a clean close leaves plain JSON Lines.
func TestAppendOverwritesZeroTail(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newTestRun(t, Policy{})
	path := eventsPath(r)
	mustAppend(t, r.events, 0, NewEvent{ID: "one", Type: "t", Data: "first"})
	size := fileSize(t, path)
	if logical := int64(len(readEvents(t, path))); size < logical+tailChunk {
		t.Fatalf("after the first append the file is %d bytes for %d bytes of lines: no zero tail of %d bytes", size, logical, tailChunk)
	}
	ro, err := OpenRunDirReadOnly(ctx, r.Dir())
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if got := ro.events.Rev(); got != 1 {
		t.Fatalf("read-only handle: rev %d, want 1", got)
	}
	other, err := OpenRunDir(ctx, r.Dir(), Policy{})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	mustAppend(t, r.events, 1, NewEvent{ID: "two", Type: "t"}, NewEvent{ID: "three", Type: "t"})
	if got := fileSize(t, path); got != size {
		t.Fatalf("an append with room in the zero tail changed the file's size from %d to %d", size, got)
	}
	// Handles that knew the old end see the new batch although the
	// file's size did not change; the other writer appends after it.
	if got := ro.events.Rev(); got != 3 {
		t.Fatalf("read-only handle after an overwrite: rev %d, want 3", got)
	}
	if _, err := other.events.Append(ctx, 3, NewEvent{ID: "four", Type: "t"}); err != nil {
		t.Fatalf("second writer after an overwrite: %v", err)
	}
	var ids []string
	if err := ro.Read(ctx, 1, func(e Event) error { ids = append(ids, e.ID); return nil }); err != nil {
		t.Fatal(err)
	}
	if strings.Join(ids, ",") != "one,two,three,four" {
		t.Fatalf("read-only handle reads %v", ids)
	}
	if err := other.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	b := readBytes(t, path)
	if bytes.IndexByte(b, 0) >= 0 || !bytes.HasSuffix(b, newline) || bytes.Count(b, newline) != 4 {
		t.Fatalf("after a clean close events.jsonl is not 4 lines of JSON Lines (%d bytes, NUL at %d)", len(b), bytes.IndexByte(b, 0))
	}
	rep, err := Verify(ctx, r.Dir())
	if err != nil || rep.Events != 4 || rep.TornBytes != 0 {
		t.Fatalf("Verify: %v %+v", err, rep)
	}
}

// TestZeroTailTornWrites: what a torn overwrite of the zero tail leaves
// is recovered like a torn append (moved aside, the file cut to the last
// complete batch), and bytes past NULs that no torn write leaves are
// damage.
func TestZeroTailTornWrites(t *testing.T) {
	t.Parallel()
	src, starts := buildBatches(t, 2, 2, 8)
	full := readBytes(t, filepath.Join(src, eventsFile))
	base, third := full[:starts[2]], full[starts[2]:]
	if len(third) < 3*sectorSize {
		t.Fatalf("the third batch is %d bytes; the cases need more than %d", len(third), 3*sectorSize)
	}
	pad := func(b []byte) []byte { return append(b, make([]byte, 8192)...) }
	// gap zeroes the sectors of the third batch that overlap [lo, hi)
	// (offsets in the file), as a disk that did not write them.
	gap := func(lo, hi int64) []byte {
		b := bytes.Clone(full)
		for i := lo; i < hi && i < int64(len(b)); i++ {
			b[i] = 0
		}
		return pad(b)
	}
	sectorAfter := func(off int64) int64 { return (off/sectorSize + 1) * sectorSize }
	s2 := starts[2]
	// Two batches, revs 13 and 14, to put past NULs.
	ts := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	later, sum := encodeLine(nil, 13, 13, "x13", "t", ts, []byte(`{}`), "")
	later, _ = encodeLine(later, 14, 14, "x14", "t", ts, []byte(`{}`), digestString(sum))
	toSector := func(b []byte) []byte { return append(b, make([]byte, sectorAfter(int64(len(b)))-int64(len(b)))...) }
	tests := []struct {
		name    string
		content []byte
		rev     int64 // want rev after open …
		torn    []byte
		corrupt int64 // … or CORRUPT_EVENT_STREAM at this rev
	}{
		{"zero tail", pad(bytes.Clone(full)), 12, nil, 0},
		{"zero tail after a batch", pad(bytes.Clone(base)), 4, nil, 0},
		{"batch cut short", pad(append(bytes.Clone(base), third[:100]...)), 4, third[:100], 0},
		{"batch missing its last line", pad(append(bytes.Clone(base), third[:bytes.LastIndexByte(third[:len(third)-1], '\n')+1]...)), 4,
			third[:bytes.LastIndexByte(third[:len(third)-1], '\n')+1], 0},
		{"first sector of the batch not written", gap(s2, sectorAfter(s2)), 4, full[sectorAfter(s2):], 0},
		{"middle sector of the batch not written", gap(sectorAfter(s2), sectorAfter(s2)+sectorSize), 4, full[sectorAfter(s2)+sectorSize:], 0},
		{"NULs ending inside a sector", gap(s2+10, s2+20), 0, nil, 5},
		{"a line of an earlier batch past NULs", pad(append(toSector(append(bytes.Clone(base), third[:50]...)), full[:starts[1]]...)), 0, nil, 5},
		{"two batches past NULs", pad(append(toSector(bytes.Clone(full)), later...)), 0, nil, 13},
		{"a torn batch past NULs", pad(append(toSector(bytes.Clone(full)), later[bytes.IndexByte(later, '\n')+1:]...)), 12, later[bytes.IndexByte(later, '\n')+1:], 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			dir, path := runDirWith(t, tt.content)
			rep, verr := Verify(ctx, dir)
			r, err := OpenRunDir(ctx, dir, Policy{})
			if tt.corrupt != 0 {
				var ce *CorruptError
				if !errors.As(err, &ce) || ce.Rev != tt.corrupt {
					t.Fatalf("open: %v, want CORRUPT_EVENT_STREAM at rev %d", err, tt.corrupt)
				}
				if verr == nil {
					t.Fatalf("Verify passed damage: %+v", rep)
				}
				if !bytes.Equal(readBytes(t, path), tt.content) || len(tornFiles(t, dir)) != 0 {
					t.Fatal("a refused open changed the directory")
				}
				return
			}
			if err != nil {
				t.Fatalf("open: %v", err)
			}
			defer r.Close()
			if got := r.events.Rev(); got != tt.rev {
				t.Fatalf("rev %d, want %d", got, tt.rev)
			}
			torn := tornFiles(t, dir)
			if tt.torn == nil {
				if len(torn) != 0 || verr != nil || rep.TornBytes != 0 {
					t.Fatalf("a clean zero tail was taken for a torn write: %v, Verify %v %+v", torn, verr, rep)
				}
				return
			}
			if len(torn) != 1 || rep.TornBytes == 0 {
				t.Fatalf("torn files %v, Verify %+v", torn, rep)
			}
			got := readBytes(t, torn[0])
			if tt.torn != nil && !bytes.HasSuffix(got, bytes.TrimRight(tt.torn, "\x00")) {
				t.Fatalf("the torn file holds %q, want it to end with %q", got, tt.torn)
			}
			if int64(len(got)) != rep.TornBytes || got[len(got)-1] == 0 {
				t.Fatalf("the torn file holds %d bytes (Verify counted %d) and must end at the last byte that is not NUL", len(got), rep.TornBytes)
			}
			if want := full[:starts[2]+int64(len(third))*(tt.rev-4)/8]; !bytes.Equal(readBytes(t, path), want) {
				t.Fatal("recovery did not cut the file to the last complete batch")
			}
		})
	}
}

// TestZeroTailOldRecord: a record without a zero tail opens and takes
// appends as before, gaining a tail.
func TestZeroTailOldRecord(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	built, _ := buildBatches(t, 2, 1)
	before := readBytes(t, filepath.Join(built, eventsFile))
	src, path := runDirWith(t, before)
	if bytes.IndexByte(before, 0) >= 0 {
		t.Fatal("a closed record kept its zero tail")
	}
	r, err := OpenRunDir(ctx, src, Policy{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := r.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, r.events, 3, NewEvent{Type: "t", Data: "more"})
	if got := readEvents(t, path); !bytes.HasPrefix(got, before) || bytes.Count(got, newline) != 4 {
		t.Fatalf("appending to an old record: %q", got)
	}
	if fileSize(t, path) <= int64(len(before))+tailChunk/2 {
		t.Fatal("the append to an old record made no zero tail")
	}
}
