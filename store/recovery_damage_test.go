package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBitFlip flips one byte of an earlier (and of the last) event: open and
// Verify must fail naming that revision, and open must change nothing.
func TestBitFlip(t *testing.T) {
	t.Parallel()
	src, _ := buildBatches(t, 2, 3, 2, 3)
	full := readBytes(t, filepath.Join(src, eventsFile))
	lines := strings.SplitAfter(string(full), "\n")
	lineStart := func(rev int) int {
		off := 0
		for _, l := range lines[:rev-1] {
			off += len(l)
		}
		return off
	}
	tests := []struct {
		name string
		rev  int
		find string // the flip hits the first byte of this text in the line
	}{
		{"data value", 3, `some payload`},
		{"data key", 3, `"batch"`},
		{"id", 3, `"b1-e0"`},
		{"type", 3, `"type":"t"`},
		{"timestamp", 3, `"ts":"2`},
		{"rev digits", 3, `"rev":3`},
		{"batch_end digits", 3, `"batch_end":5`},
		{"prev", 3, `"prev":"sha256:`},
		{"digest", 3, `"digest":"sha256:`},
		{"structure", 3, `{"batch_end"`},
		{"first event", 1, `some payload`},
		{"last event", 10, `some payload`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			k := strings.Index(lines[tt.rev-1], tt.find)
			if k < 0 {
				t.Fatalf("%q not in line %d", tt.find, tt.rev)
			}
			// Move to the first byte that is a letter or digit, so the flip
			// (xor 1) keeps it printable and never makes a line feed.
			pos := lineStart(tt.rev) + k
			for !isAlnum(full[pos]) {
				pos++
			}
			if tt.name == "structure" {
				pos = lineStart(tt.rev) + k // flip '{' itself
			}
			flipped := bytes.Clone(full)
			flipped[pos] ^= 1
			dir := filepath.Join(t.TempDir(), "run")
			os.Mkdir(dir, 0o755)
			writeFile(t, filepath.Join(dir, eventsFile), flipped)
			before := dirState(t, dir)
			_, err := OpenRunDir(context.Background(), dir, Policy{})
			var ce *CorruptError
			if !errors.As(err, &ce) || ce.Rev != int64(tt.rev) {
				t.Fatalf("open: %v, want CORRUPT_EVENT_STREAM at rev %d", err, tt.rev)
			}
			diff(t, "directory after a failed open", before, dirState(t, dir))
			rep, err := Verify(context.Background(), dir)
			if !errors.Is(err, ErrCorruptEventStream) || len(rep.Faults) == 0 || rep.Faults[0].Rev != int64(tt.rev) {
				t.Fatalf("Verify: %v, faults %v; want the first at rev %d", err, rep.Faults, tt.rev)
			}
			// A flipped digest also breaks the next line's prev link;
			// anything else is one fault, where the flip is.
			if wantFaults := 1; tt.name != "digest" && len(rep.Faults) != wantFaults {
				t.Errorf("Verify found %v, want exactly one fault", rep.Faults)
			}
			diff(t, "directory after Verify", before, dirState(t, dir))
		})
	}
}

func TestDuplicateIDOnDisk(t *testing.T) {
	t.Parallel()
	var buf []byte
	var prev string
	for rev := int64(1); rev <= 3; rev++ {
		id := fmt.Sprintf("e%d", rev)
		if rev == 3 {
			id = "e1"
		}
		var sum [32]byte
		buf, sum = encodeLine(buf, rev, rev, id, "t", nowMillis(), []byte(`{}`), prev)
		prev = digestString(sum)
	}
	dir := filepath.Join(t.TempDir(), "run")
	os.Mkdir(dir, 0o755)
	writeFile(t, filepath.Join(dir, eventsFile), buf)
	_, err := OpenRunDir(context.Background(), dir, Policy{})
	var ce *CorruptError
	if !errors.As(err, &ce) || ce.Rev != 3 || !strings.Contains(ce.Problem, "duplicate event id") {
		t.Fatalf("open: %v, want a duplicate id at rev 3", err)
	}
}

// lineStart returns the offset of line n (1-based) of b.
func lineStart(b []byte, n int) int {
	off := 0
	for i := 1; i < n; i++ {
		off += bytes.IndexByte(b[off:], '\n') + 1
	}
	return off
}

// flip returns a copy of b with the byte at off replaced by c.
func flip(b []byte, off int, c byte) []byte {
	b = bytes.Clone(b)
	b[off] = c
	return b
}
