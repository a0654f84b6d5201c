package store

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestReadFrom(t *testing.T) {
	t.Parallel()
	r := newTestRun(t, Policy{})
	s := r.events
	for i := 0; i < 300; i += 3 {
		mustAppend(t, s, int64(i), NewEvent{Type: "t", Data: i}, NewEvent{Type: "t", Data: i + 1}, NewEvent{Type: "t", Data: i + 2})
	}
	check := func(s *stream) {
		for _, from := range []int64{-5, 0, 1, 2, 63, 64, 65, 66, 128, 129, 200, 299, 300, 301, 1000} {
			var revs []int64
			err := s.Read(context.Background(), from, func(e Event) error {
				if string(e.Data) != fmt.Sprint(e.Rev-1) {
					t.Errorf("rev %d data %s", e.Rev, e.Data)
				}
				revs = append(revs, e.Rev)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			first := max(from, 1)
			if first > 300 {
				if len(revs) != 0 {
					t.Errorf("Read(%d) returned %d events", from, len(revs))
				}
				continue
			}
			if len(revs) != int(300-first+1) || revs[0] != first || revs[len(revs)-1] != 300 {
				t.Errorf("Read(%d) returned %d events from %d to %d", from, len(revs), revs[0], revs[len(revs)-1])
			}
		}
	}
	check(s)
	check(reopen(t, r, Policy{}).events)
}

func TestReadStopsOnCallbackError(t *testing.T) {
	t.Parallel()
	r := newTestRun(t, Policy{})
	mustAppend(t, r.events, 0, NewEvent{Type: "t"}, NewEvent{Type: "t"}, NewEvent{Type: "t"})
	stop := errors.New("stop")
	n := 0
	err := r.events.Read(context.Background(), 1, func(Event) error { n++; return stop })
	if err != stop || n != 1 {
		t.Fatalf("Read = %v after %d calls, want the callback's error after 1", err, n)
	}
}

func TestHandlesSeeEachOther(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := newTestRun(t, Policy{})
	b, err := OpenRunDir(ctx, a.Dir(), Policy{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	mustAppend(t, a.events, 0, NewEvent{ID: "1", Type: "t"})
	if got := b.events.Rev(); got != 1 {
		t.Fatalf("b.Rev() = %d after a appended, want 1", got)
	}
	mustAppend(t, b.events, 1, NewEvent{ID: "2", Type: "t"})
	if _, err := a.events.Append(ctx, 1, NewEvent{ID: "3", Type: "t"}); !errors.Is(err, ErrRevisionConflict) {
		t.Fatalf("a appending at stale rev 1: %v, want a conflict", err)
	}
	if _, err := a.events.Append(ctx, 2, NewEvent{ID: "2", Type: "t", Data: "other"}); !errors.Is(err, ErrInvalidEvent) {
		t.Fatalf("a appending b's id: %v, want INVALID_EVENT", err)
	}
	mustAppend(t, a.events, 2, NewEvent{ID: "3", Type: "t"})
	diff(t, "ids through b", []string{"1", "2", "3"}, ids(readAll(t, b.events)))
}

func ids(evs []Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.ID
	}
	return out
}

func TestFollow(t *testing.T) {
	t.Parallel()
	r := newTestRun(t, Policy{})
	other, err := OpenRunDir(context.Background(), r.Dir(), Policy{})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	mustAppend(t, r.events, 0, NewEvent{ID: "1", Type: "t"}, NewEvent{ID: "2", Type: "t"})
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan Event, 16)
	done := make(chan error, 1)
	go func() {
		done <- r.events.Follow(ctx, 2, func(e Event) error { got <- e; return nil })
	}()
	next := func() string {
		t.Helper()
		select {
		case e := <-got:
			return e.ID
		case <-time.After(10 * time.Second):
			t.Fatal("Follow delivered nothing")
			return ""
		}
	}
	if id := next(); id != "2" {
		t.Fatalf("first followed event %s, want 2", id)
	}
	mustAppend(t, r.events, 2, NewEvent{ID: "3", Type: "t"}) // same handle: immediate
	if id := next(); id != "3" {
		t.Fatalf("followed %s, want 3", id)
	}
	mustAppend(t, other.events, 3, NewEvent{ID: "4", Type: "t"}, NewEvent{ID: "5", Type: "t"}) // other handle: polled
	if a, b := next(), next(); a != "4" || b != "5" {
		t.Fatalf("followed %s %s, want 4 5", a, b)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Follow returned %v, want context.Canceled", err)
	}
}
