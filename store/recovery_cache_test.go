package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

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
				// The advice must move the index aside by its path, never
				// say "remove" beside events.jsonl (the record itself).
				if !tt.noCache && (!strings.Contains(ce.Problem, "mv "+path+cacheSuffix+" ") || strings.Contains(ce.Problem, "remove")) {
					t.Fatalf("%s: %q; want advice to move %s aside and no advice to remove a file", what, ce.Problem, path+cacheSuffix)
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

// The advice to move the index aside is a command a shell runs as
// shown: a run directory with a space or a quote in its path is quoted.
func TestRestoredAdviceQuotesThePath(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ path, want string }{
		{"/runs/r1/events.jsonl", "mv /runs/r1/events.jsonl.idx /runs/r1/events.jsonl.idx.bad,"},
		{"/my runs/it's/events.jsonl", `mv '/my runs/it'\''s/events.jsonl.idx' '/my runs/it'\''s/events.jsonl.idx.bad',`},
	} {
		if got := (&scanner{path: tc.path}).restoredAdvice(); !strings.Contains(got, tc.want) {
			t.Errorf("restoredAdvice for %s = %q; want %q in it", tc.path, got, tc.want)
		}
	}
}
