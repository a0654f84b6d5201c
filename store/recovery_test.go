package store

import (
	"bytes"
	"context"
	"encoding/binary"
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

// TestCacheNeverHidesDamage checks that the validated-prefix cache is used
// when it matches the file and ignored (full validation) when anything
// about it or the prefix it covers is off — so damage is still found.
func TestCacheNeverHidesDamage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newTestRun(t, Policy{})
	append600(t, r, "payload")
	r.Close() // writes the cache
	path := eventsPath(r)
	if _, err := os.Stat(path + cacheSuffix); err != nil {
		t.Fatalf("no cache after close: %v", err)
	}
	good := readBytes(t, path)
	cache := readBytes(t, path+cacheSuffix)

	// A usable cache: the open validates nothing before its end.
	r2, err := OpenRunDir(ctx, r.Dir(), Policy{})
	if err != nil {
		t.Fatal(err)
	}
	if r2.events.loadedRev != 600 || r2.events.Rev() != 600 {
		t.Fatalf("loaded from cache rev %d, rev %d; want the cache to cover all 600", r2.events.loadedRev, r2.events.Rev())
	}
	// Ids in the cached prefix are still known.
	if _, err := r2.events.Append(ctx, 600, NewEvent{ID: "e17", Type: "t"}); !errors.Is(err, ErrInvalidEvent) {
		t.Fatalf("appending an id from the cached prefix: %v, want INVALID_EVENT", err)
	}
	r2.Close()
	// The same number of events with other data: a valid stream, but not
	// the one the cache covers.
	other := newTestRun(t, Policy{})
	append600(t, other, "PAYLOAD")
	other.Close()
	rewritten := readBytes(t, eventsPath(other))

	tests := []struct {
		name    string
		events  func([]byte) []byte
		cache   func([]byte) []byte
		corrupt int64  // 0: the open must succeed with rev 600
		index   string // the open must fail with an *IndexError saying this
	}{
		{"flip in the cached prefix", func(b []byte) []byte { b = bytes.Clone(b); b[bytes.Index(b, []byte("payload 17"))] ^= 1; return b }, nil, 18, ""},
		// A cache that exists is evidence; one that is not a cache is
		// damage, never taken for no cache.
		{"cache damaged", nil, func(c []byte) []byte { c = bytes.Clone(c); c[20] ^= 1; return c }, 0, "checksum"},
		{"cache truncated", nil, func(c []byte) []byte { return c[:len(c)/2] }, 0, "checksum"},
		{"cache empty", nil, func([]byte) []byte { return nil }, 0, "empty"},
		{"cache of another version", nil, func(c []byte) []byte { c = bytes.Clone(c); c[7] = '9'; return c }, 0, `version "09"`},
		{"cache offsets out of order", nil, func(c []byte) []byte {
			c = bytes.Clone(c)
			binary.LittleEndian.PutUint64(c[cacheHead+8+8*2:], 1)
			return resealCache(c)
		}, 0, "offsets must increase"},
		{"cache offset past its end", nil, func(c []byte) []byte {
			c = bytes.Clone(c)
			binary.LittleEndian.PutUint64(c[cacheHead+8+8*9:], 1<<40)
			return resealCache(c)
		}, 0, "past the last line"},
		// The cache recorded the last line as committed: losing it is
		// damage, not a torn write (the cache is written only after the
		// bytes it covers were fdatasync'd).
		{"cache claims more than the file", func(b []byte) []byte { return b[:bytes.LastIndex(b[:len(b)-1], []byte("\n"))+1] }, nil, 600, ""},
		{"cache is garbage", nil, func([]byte) []byte { return []byte("garbage") }, 0, "not an index"},
		// A stream that validates but is not the one the cache covers
		// was rewritten.
		{"stream rewritten", func(b []byte) []byte { return rewritten }, nil, 0, "does not match events.jsonl"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "run")
			os.Mkdir(dir, 0o755)
			ev, c := good, cache
			if tt.events != nil {
				ev = tt.events(good)
			}
			if tt.cache != nil {
				c = tt.cache(cache)
			}
			writeFile(t, filepath.Join(dir, eventsFile), ev)
			writeFile(t, filepath.Join(dir, eventsFile+cacheSuffix), c)
			r, err := OpenRunDir(ctx, dir, Policy{})
			if tt.index != "" {
				var ie *IndexError
				if !errors.As(err, &ie) || !errors.Is(err, ErrCorruptEventStream) || ie.Path != filepath.Join(dir, eventsFile+cacheSuffix) ||
					!strings.Contains(ie.Problem, tt.index) || !strings.Contains(err.Error(), "obversa verify") {
					t.Fatalf("open: %v, want an *IndexError naming the cache and saying %q", err, tt.index)
				}
				if !bytes.Equal(readBytes(t, filepath.Join(dir, eventsFile+cacheSuffix)), c) || !bytes.Equal(readBytes(t, filepath.Join(dir, eventsFile)), ev) {
					t.Fatal("a refused open changed the stream or the cache")
				}
				return
			}
			if tt.corrupt != 0 {
				var ce *CorruptError
				if !errors.As(err, &ce) || ce.Rev != tt.corrupt {
					t.Fatalf("open: %v, want CORRUPT_EVENT_STREAM at rev %d", err, tt.corrupt)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if got := r.events.Rev(); got != 600 {
				t.Fatalf("rev %d, want 600", got)
			}
			if r.events.loadedRev != 0 {
				t.Fatalf("a bad cache was used (it covered rev %d)", r.events.loadedRev)
			}
		})
	}
}

func TestOpenMissingRun(t *testing.T) {
	t.Parallel()
	s, _ := Open(t.TempDir(), "ns")
	if _, err := s.OpenRun(context.Background(), "nope", Policy{}); !errors.Is(err, ErrRunNotFound) {
		t.Fatalf("OpenRun of a missing run: %v", err)
	}
	if _, err := s.OpenRun(context.Background(), "../x", Policy{}); !errors.Is(err, ErrInvalidID) {
		t.Fatalf("OpenRun with a bad id: %v", err)
	}
	if _, err := s.CreateRun(context.Background(), "r", Policy{MaxBatchBytes: -1}); !errors.Is(err, ErrInvalidPolicy) {
		t.Fatalf("CreateRun with a negative limit: %v", err)
	}
	if _, err := s.CreateRun(context.Background(), "r", Policy{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateRun(context.Background(), "r", Policy{}); !errors.Is(err, ErrRunExists) {
		t.Fatalf("second CreateRun: %v", err)
	}
	runs, err := s.ListRuns(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	diff(t, "runs", []string{"r"}, runs)
}

// TestOpenWithoutEventsFile opens a run directory whose events.jsonl was
// never created (a crash inside CreateRun).
func TestOpenWithoutEventsFile(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "run")
	os.Mkdir(dir, 0o755)
	r, err := OpenRunDir(context.Background(), dir, Policy{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	mustAppend(t, r.events, 0, NewEvent{Type: "t"})
}

// TestCommittedEvidenceBeatsTornTail: a tail that would be torn, or a
// stream that ends early, is corruption when the validated-prefix cache
// recorded those bytes as committed (the cache is written only after they
// were fdatasync'd) — whether or not the cache still matches the stream.
// Nothing is cut, the cache is kept, and read-only opens and Verify say the
// same. Without a cache the torn-tail rule still applies.
func TestCommittedEvidenceBeatsTornTail(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	good, cache := twelveInThrees(t)
	lastLine := bytes.LastIndexByte(good[:len(good)-1], '\n') + 1
	lastBatch := lineStart(good, 10) // the batch of revs 10..12

	tests := []struct {
		name    string
		events  []byte
		noCache bool
		rev     int64 // corrupt at; 0: recovers (torn) to 9 events
		problem string
	}{
		{"committed last line flipped to non-JSON", flip(good, lastLine, 'x'), false, 12, "not JSON"},
		{"committed last line cut short", good[:len(good)-5], false, 12, "not terminated"},
		{"committed last line missing", good[:lastLine], false, 12, "only 2 line(s)"},
		{"whole committed batch missing", good[:lastBatch], false, 10, "committed events are missing"},
		{"last line flipped, no cache: torn", flip(good, lastLine, 'x'), true, 0, ""},
		{"last line cut short, no cache: torn", good[:len(good)-5], true, 0, ""},
		{"damaged line followed by a complete batch", flip(good, lineStart(good, 8), 'x'), true, 8, "not valid JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "run")
			os.Mkdir(dir, 0o755)
			path := filepath.Join(dir, eventsFile)
			writeFile(t, path, tt.events)
			if !tt.noCache {
				writeFile(t, path+cacheSuffix, cache)
			}
			ro, rerr := OpenRunDirReadOnly(ctx, dir)
			rep, verr := Verify(ctx, dir)
			w, err := OpenRunDir(ctx, dir, Policy{})
			if tt.rev == 0 {
				if err != nil || rerr != nil {
					t.Fatalf("open: %v; read-only open: %v", err, rerr)
				}
				defer w.Close()
				defer ro.Close()
				if w.events.Rev() != 9 || rep.TornBytes == 0 || verr != nil {
					t.Fatalf("rev %d, Verify %+v %v: want the tail torn and cut to 9", w.events.Rev(), rep, verr)
				}
				return
			}
			for what, err := range map[string]error{"open": err, "read-only open": rerr} {
				var ce *CorruptError
				if !errors.As(err, &ce) || ce.Rev != tt.rev || !strings.Contains(ce.Problem, tt.problem) {
					t.Fatalf("%s: %v; want CORRUPT_EVENT_STREAM at rev %d (%s)", what, err, tt.rev, tt.problem)
				}
			}
			if !errors.Is(verr, ErrCorruptEventStream) || rep.TornBytes != 0 || len(rep.Faults) == 0 || rep.Faults[0].Rev != tt.rev {
				t.Fatalf("Verify: %v %+v; want a fault at rev %d, no torn bytes", verr, rep, tt.rev)
			}
			if !bytes.Equal(readBytes(t, path), tt.events) {
				t.Fatal("a refused open changed events.jsonl")
			}
			if !tt.noCache && !bytes.Equal(readBytes(t, path+cacheSuffix), cache) {
				t.Fatal("a refused open changed the cache, the evidence")
			}
			if torn, _ := filepath.Glob(path + ".torn-*"); len(torn) != 0 {
				t.Fatalf("committed bytes were moved aside as torn: %v", torn)
			}
		})
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

// append600 appends 600 events e0..e599 in batches of 6, with data
// "<data> <n>".
func append600(t *testing.T, r *Run, data string) {
	t.Helper()
	for i := 0; i < 600; i += 6 {
		evs := make([]NewEvent, 6)
		for j := range evs {
			evs[j] = NewEvent{ID: fmt.Sprintf("e%d", i+j), Type: "t", Data: fmt.Sprintf("%s %d", data, i+j)}
		}
		mustAppend(t, r.events, int64(i), evs...)
	}
}

// twelveInThrees returns the stream and the validated-prefix cache of a
// run of 12 events appended in batches of 3.
func twelveInThrees(t *testing.T) (stream, cache []byte) {
	t.Helper()
	r := newTestRun(t, Policy{})
	for i := 0; i < 12; i += 3 {
		mustAppend(t, r.events, int64(i), NewEvent{Type: "t", Data: i}, NewEvent{Type: "t", Data: i + 1}, NewEvent{Type: "t", Data: i + 2})
	}
	r.Close() // writes the cache: 12 events committed
	return readBytes(t, eventsPath(r)), readBytes(t, eventsPath(r)+cacheSuffix)
}
