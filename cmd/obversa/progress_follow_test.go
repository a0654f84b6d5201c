package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/obversa/obversa/store"
)

// TestFollowRecordTellsReadErrors: the progress views follow a run's
// record; when reading it fails (here a line that is not an event is
// added to events.jsonl under the follower), the view is told why, once,
// instead of freezing silently, and stopping it still returns.
func TestFollowRecordTellsReadErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := store.Open(t.TempDir(), "default")
	if err != nil {
		t.Fatal(err)
	}
	rec, err := st.CreateRun(ctx, "run-1", store.Policy{})
	if err != nil {
		t.Fatal(err)
	}
	own, err := rec.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rec.Append(ctx, 0, store.NewEvent{Type: "test:one", Data: map[string]int{"n": 1}}); err != nil {
		t.Fatal(err)
	}
	// The writer's close leaves plain JSON Lines (no zero tail), which
	// the line below extends.
	own.Release()
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	ro, err := store.OpenRunDirReadOnly(ctx, rec.Dir())
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	counted := &followCounter{Record: ro}
	var mu sync.Mutex
	var seen []int64
	var told []string
	stop := followRecord(counted, 1, func(e store.Event) {
		mu.Lock()
		seen = append(seen, e.Rev)
		mu.Unlock()
	}, func(err error) {
		mu.Lock()
		told = append(told, err.Error())
		mu.Unlock()
	})
	count := func() (int, int) {
		mu.Lock()
		defer mu.Unlock()
		return len(seen), len(told)
	}
	waitFor(t, 30*time.Second, "the first event", func() bool { n, _ := count(); return n == 1 })
	// The first event again as the second: a line whose digest and
	// chain do not hold.
	path := filepath.Join(rec.Dir(), "events.jsonl")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	line := strings.Replace(strings.SplitN(string(b), "\n", 2)[0], `"rev":1`, `"rev":2`, 1)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(line + "\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	waitFor(t, 30*time.Second, "the view to be told the record cannot be read", func() bool { _, n := count(); return n > 0 })
	// It follows again every second; the same failure is told once,
	// however many times the follow fails again.
	again := counted.follows.Load() + 2
	waitFor(t, 30*time.Second, "the view to follow the record twice more", func() bool { return counted.follows.Load() >= again })
	stop()
	mu.Lock()
	defer mu.Unlock()
	if len(told) != 1 || !strings.Contains(told[0], "CORRUPT_EVENT_STREAM") {
		t.Errorf("told %q, want the corrupt stream once", told)
	}
}

// followCounter is a store.Record that counts the Follow calls made on it
// and passes each to the record it wraps.
type followCounter struct {
	store.Record
	follows atomic.Int32
}

// Follow counts the call and follows the wrapped record.
func (c *followCounter) Follow(ctx context.Context, from int64, fn func(store.Event) error) error {
	c.follows.Add(1)
	return c.Record.Follow(ctx, from, fn)
}
