package store

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestAppendContextDone(t *testing.T) {
	t.Parallel()
	r := newTestRun(t, Policy{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := r.events.Append(ctx, 0, NewEvent{Type: "t"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Append with a cancelled context: %v", err)
	}
	if r.events.Rev() != 0 {
		t.Fatal("a cancelled append was written")
	}
}

// TestAppendContextDoneWhileWaiting cancels an append that waits for the
// stream while another holds it: it returns at once and is never written.
func TestAppendContextDoneWhileWaiting(t *testing.T) {
	t.Parallel()
	r := newTestRun(t, Policy{})
	s := r.events
	s.mu <- struct{}{} // another append holds the stream
	ctx, cancel := context.WithCancel(context.Background())
	waiter := make(chan error, 1)
	go func() {
		_, err := s.Append(ctx, 0, NewEvent{ID: "cancelled", Type: "t"})
		waiter <- err
	}()
	select {
	case err := <-waiter:
		t.Fatalf("Append returned %v while the stream was held", err)
	case <-time.After(20 * time.Millisecond):
	}
	cancel()
	if err := <-waiter; !errors.Is(err, context.Canceled) {
		t.Fatalf("waiting append: %v, want context.Canceled", err)
	}
	s.unlock()
	mustAppend(t, s, 0, NewEvent{ID: "after", Type: "t"})
	diff(t, "ids", []string{"after"}, ids(readAll(t, s)))
}

func TestClosed(t *testing.T) {
	t.Parallel()
	r := newTestRun(t, Policy{})
	s := r.events
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	ctx := context.Background()
	if _, err := s.Append(ctx, 0, NewEvent{Type: "t"}); !errors.Is(err, ErrClosed) {
		t.Errorf("Append after Close: %v", err)
	}
	if err := s.Read(ctx, 1, func(Event) error { return nil }); !errors.Is(err, ErrClosed) {
		t.Errorf("Read after Close: %v", err)
	}
	if _, err := r.PutArtifact(ctx, []byte("x"), "text/plain", "p"); !errors.Is(err, ErrClosed) {
		t.Errorf("PutArtifact after Close: %v", err)
	}
	if _, err := r.Lock(context.Background()); !errors.Is(err, ErrClosed) {
		t.Errorf("Lock after Close: %v", err)
	}
}
