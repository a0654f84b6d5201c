package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// buildBatches creates a run whose stream holds the given batch sizes and
// returns it closed, with the byte offset where each batch starts.
func buildBatches(t *testing.T, sizes ...int) (dir string, starts []int64) {
	t.Helper()
	r := newTestRun(t, Policy{})
	rev := int64(0)
	for b, n := range sizes {
		starts = append(starts, int64(len(readEvents(t, eventsPath(r)))))
		evs := make([]NewEvent, n)
		for i := range evs {
			evs[i] = NewEvent{ID: fmt.Sprintf("b%d-e%d", b, i), Type: "t", Data: map[string]any{"batch": b, "i": i, "text": "some payload"}}
		}
		rev = mustAppend(t, r.events, rev, evs...)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	os.Remove(eventsPath(r) + cacheSuffix)
	return r.Dir(), starts
}

// dirState lists a directory's files with their contents.
func dirState(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.Type().IsRegular() {
			out[e.Name()] = string(readBytes(t, filepath.Join(dir, e.Name())))
		}
	}
	return out
}

func tornFiles(t *testing.T, dir string) []string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(dir, eventsFile+".torn-*"))
	sort.Strings(m)
	return m
}

// TestTruncationAtEveryOffset cuts events.jsonl at every byte offset inside
// its last batch: each open must recover to the previous batch boundary,
// keep the cut bytes aside, and accept the next append.
func TestTruncationAtEveryOffset(t *testing.T) {
	t.Parallel()
	src, starts := buildBatches(t, 2, 1, 3)
	full := readBytes(t, filepath.Join(src, eventsFile))
	last := starts[2]
	ctx := context.Background()
	for cut := last; cut <= int64(len(full)); cut++ {
		dir := filepath.Join(t.TempDir(), "run")
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dir, eventsFile), full[:cut])
		r, err := OpenRunDir(ctx, dir, Policy{})
		if err != nil {
			t.Fatalf("cut at %d: open: %v", cut, err)
		}
		wantRev, wantSize := int64(3), last
		if cut == int64(len(full)) {
			wantRev, wantSize = 6, cut
		}
		if got := r.events.Rev(); got != wantRev {
			t.Fatalf("cut at %d: rev %d, want %d", cut, got, wantRev)
		}
		if got := readBytes(t, filepath.Join(dir, eventsFile)); !bytes.Equal(got, full[:wantSize]) {
			t.Fatalf("cut at %d: file is %d bytes, want the first %d", cut, len(got), wantSize)
		}
		torn := tornFiles(t, dir)
		switch {
		case cut == last || cut == int64(len(full)):
			if len(torn) != 0 {
				t.Fatalf("cut at %d (a batch boundary): torn files %v", cut, torn)
			}
		case len(torn) != 1 || !bytes.Equal(readBytes(t, torn[0]), full[last:cut]):
			t.Fatalf("cut at %d: torn files %v, want one holding the %d cut bytes", cut, torn, cut-last)
		}
		if _, err := r.events.Append(ctx, wantRev, NewEvent{Type: "t"}); err != nil {
			t.Fatalf("cut at %d: append after recovery: %v", cut, err)
		}
		r.Close()
	}
}

// TestTornTails covers what counts as a torn last batch and what is damage.
func TestTornTails(t *testing.T) {
	t.Parallel()
	src, starts := buildBatches(t, 2, 2)
	full := readBytes(t, filepath.Join(src, eventsFile))
	lines := strings.SplitAfter(string(full), "\n")[:4]
	edited := strings.Replace(lines[3], "some payload", "some pAyload", 1)
	tests := []struct {
		name    string
		content string
		rev     int64 // want rev after open (torn) …
		corrupt int64 // … or want CORRUPT_EVENT_STREAM at this rev
	}{
		{"intact", string(full), 4, 0},
		{"NUL bytes after the last batch", string(full) + "\x00\x00\x00\x00", 4, 0},
		{"garbage line after the last batch", string(full) + "garbage\n", 4, 0},
		{"half a line with a line feed", string(full) + lines[0][:40] + "\n", 4, 0},
		{"last batch missing its last line", string(full[:starts[1]]) + lines[2], 2, 0},
		{"last batch missing its line feed", string(full[:len(full)-1]), 2, 0},
		{"JSON that is not an envelope as last line", string(full) + "{}\n", 0, 5},
		{"edited last line", lines[0] + lines[1] + lines[2] + edited, 0, 4},
		{"garbage before the last line", lines[0] + lines[1] + "garbage\n" + lines[2] + lines[3], 0, 3},
		{"blank line in the middle", lines[0] + lines[1] + "\n" + lines[2] + lines[3], 0, 3},
		{"first batch missing a line", lines[0] + lines[2] + lines[3], 0, 2},
		{"batches swapped", lines[2] + lines[3] + lines[0] + lines[1], 0, 1},
		{"a line repeated", lines[0] + lines[1] + lines[1] + lines[2], 0, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "run")
			os.Mkdir(dir, 0o755)
			writeFile(t, filepath.Join(dir, eventsFile), []byte(tt.content))
			before := dirState(t, dir)
			r, err := OpenRunDir(context.Background(), dir, Policy{})
			if tt.corrupt != 0 {
				var ce *CorruptError
				if !errors.As(err, &ce) || ce.Rev != tt.corrupt || ce.Line != int(tt.corrupt) {
					t.Fatalf("open: %v, want CORRUPT_EVENT_STREAM at rev %d", err, tt.corrupt)
				}
				if Code(err) != "CORRUPT_EVENT_STREAM" || !strings.Contains(err.Error(), fmt.Sprintf("line %d", tt.corrupt)) {
					t.Errorf("error %q (code %s) does not name line %d", err, Code(err), tt.corrupt)
				}
				diff(t, "directory after a failed open", before, dirState(t, dir))
				return
			}
			if err != nil {
				t.Fatalf("open: %v", err)
			}
			defer r.Close()
			if got := r.events.Rev(); got != tt.rev {
				t.Fatalf("rev %d, want %d", got, tt.rev)
			}
		})
	}
}
