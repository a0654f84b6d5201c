package store

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"
)

// TestPresentAndFollowSeeTheRunGo: a handle's Present is nil while its
// run directory holds the events.jsonl it has open, and ErrRunNotFound
// once that file is removed or replaced by a run of the same id; a Follow
// waiting for new events returns that error within a few seconds.
func TestPresentAndFollowSeeTheRunGo(t *testing.T) {
	t.Parallel()
	for _, replace := range []bool{false, true} {
		ctx := context.Background()
		r := newTestRun(t, Policy{})
		mustAppend(t, r.events, 0, NewEvent{Type: "t"})
		ro, err := OpenRunDirReadOnly(ctx, r.Dir())
		if err != nil {
			t.Fatal(err)
		}
		defer ro.Close()
		if err := ro.Present(ctx); err != nil {
			t.Fatalf("Present of a stored run: %v", err)
		}
		followed := make(chan error, 1)
		go func() { followed <- ro.Follow(ctx, 1, func(Event) error { return nil }) }()
		if err := os.RemoveAll(r.Dir()); err != nil {
			t.Fatal(err)
		}
		if replace {
			if err := os.MkdirAll(r.Dir(), 0o755); err != nil {
				t.Fatal(err)
			}
			writeFile(t, eventsPath(r), nil)
		}
		if err := ro.Present(ctx); !errors.Is(err, ErrRunNotFound) {
			t.Fatalf("Present after the run was removed (replaced: %v): %v, want ErrRunNotFound", replace, err)
		}
		select {
		case err := <-followed:
			if !errors.Is(err, ErrRunNotFound) {
				t.Fatalf("Follow after the run was removed (replaced: %v): %v, want ErrRunNotFound", replace, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("Follow still waits 5 s after the run was removed (replaced: %v)", replace)
		}
	}
}
