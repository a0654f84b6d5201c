package store

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// dupIDStream returns a stream of n one-event batches whose events all
// have the id "dup" (which no writer records: every open's full
// validation refuses it) and the validated-prefix cache a writer would
// have written for its first cached events, as one crafted to vouch for
// them would be.
func dupIDStream(t *testing.T, n, cached int) (stream, cache []byte) {
	t.Helper()
	ts := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var prev []byte
	st := &chainState{}
	for rev := int64(1); rev <= int64(n); rev++ {
		off := int64(len(stream))
		var sum [32]byte
		stream, sum = encodeLine(stream, rev, rev, "dup", "t", ts, []byte(fmt.Sprint(rev)), prev)
		prev = appendDigest(prev[:0], sum)
		if rev > int64(cached) {
			continue
		}
		if (rev-1)%indexEvery == 0 {
			st.offsets = append(st.offsets, off)
		}
		st.idHashes = append(st.idHashes, idHash([]byte("dup")))
		st.rev, st.size, st.last, st.lastLine = rev, int64(len(stream)), sum, off
	}
	st.crc = crc32.Checksum(stream[:st.size], castagnoli)
	return stream, encodeCache(st)
}

// TestReadOnlyOpenIndexesIDsOnFirstCheck: a read-only open that reads
// no line past the cache does not build the id index (only a duplicate
// check uses it), so it opens and reads a stream whose cache records one
// id at two revs; the first line it validates past the cache builds the
// index and refuses that cache, naming it (a writable open refuses the
// stream at once).
func TestReadOnlyOpenIndexesIDsOnFirstCheck(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "run")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, eventsFile)
	stream, cache := dupIDStream(t, 3, 2)
	cut := strings.Index(string(stream), "\n{\"batch_end\":3") + 1
	writeFile(t, path, stream[:cut])
	writeFile(t, path+cacheSuffix, cache)

	// A writable open indexes the ids at once: the cache does not match,
	// and the full validation names the damaged line.
	var ce *CorruptError
	if _, err := OpenRunDir(ctx, dir, Policy{}); !errors.As(err, &ce) || ce.Rev != 2 {
		t.Fatalf("writable open: %v, want CORRUPT_EVENT_STREAM naming rev 2", err)
	}
	ro, err := OpenRunDirReadOnly(ctx, dir)
	if err != nil {
		t.Fatalf("read-only open of a stream its cache covers whole: %v", err)
	}
	defer ro.Close()
	if ro.events.st.ids != nil {
		t.Fatal("a read-only open built the id index")
	}
	n := 0
	if err := ro.events.Read(ctx, 1, func(Event) error { n++; return nil }); err != nil || n != 2 {
		t.Fatalf("read %d events (%v), want the 2 committed", n, err)
	}

	// The writer's next line (a third "dup") is the first the handle
	// validates: the index is built, and the cache refused.
	writeFile(t, path, stream)
	var ie *IndexError
	err = ro.events.Read(ctx, 1, func(Event) error { return nil })
	if !errors.As(err, &ie) || ie.Path != path+cacheSuffix || !strings.Contains(ie.Problem, "revs 1 and 2 with the same id") {
		t.Fatalf("read past the cache: %v, want an *IndexError naming the cache and the two revs", err)
	}
	if _, err := OpenRunDirReadOnly(ctx, dir); !errors.As(err, &ie) {
		t.Fatalf("read-only open with a line past the cache: %v, want an *IndexError", err)
	}
}

// TestReadOnlyIndexBuiltOnceUnderConcurrentReaders: readers of one
// read-only handle pick up a writer's appends side by side; the first
// line past the cache builds the id index, under the stream's mutex, once
// and whole (run with -race), and the handle still refuses nothing it
// should accept.
func TestReadOnlyIndexBuiltOnceUnderConcurrentReaders(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newTestRun(t, Policy{})
	for i := 0; i < 300; i += 3 {
		mustAppend(t, r.events, int64(i), NewEvent{Type: "t", Data: i}, NewEvent{Type: "t", Data: i + 1}, NewEvent{Type: "t", Data: i + 2})
	}
	dir := filepath.Dir(eventsPath(r))
	r.Close() // the cache covers all 300
	w, err := OpenRunDir(ctx, dir, Policy{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	ro, err := OpenRunDirReadOnly(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if ro.events.st.ids != nil {
		t.Fatal("a read-only open built the id index")
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; k < 50; k++ {
				last := int64(0)
				if err := ro.events.Read(ctx, 1, func(e Event) error {
					if e.Rev != last+1 {
						return fmt.Errorf("rev %d after %d", e.Rev, last)
					}
					last = e.Rev
					return nil
				}); err != nil {
					errs <- err
					return
				}
				_ = ro.events.Rev()
			}
		}()
	}
	for i := 300; i < 360; i++ {
		mustAppend(t, w.events, int64(i), NewEvent{ID: fmt.Sprintf("e%d", i), Type: "t", Data: i})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if got := ro.events.Rev(); got != 360 {
		t.Fatalf("read-only handle at rev %d, want 360", got)
	}
	// Taken under the mutex, as every use of the state is.
	ro.events.mu <- struct{}{}
	ids, hashes := len(ro.events.st.ids), len(ro.events.st.idHashes)
	ro.events.unlock()
	if ids != 360 || hashes != 360 {
		t.Fatalf("id index holds %d ids and %d hashes, want every one of the 360 events", ids, hashes)
	}
	// A duplicate of a cached id is still refused as damage past the cache.
	if _, err := w.events.Append(ctx, 360, NewEvent{ID: "e300", Type: "t", Data: 1}); !errors.Is(err, ErrInvalidEvent) {
		t.Fatalf("append of a used id: %v, want ErrInvalidEvent", err)
	}
}
