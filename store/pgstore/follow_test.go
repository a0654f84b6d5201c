package pgstore

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/obversa/obversa/store"
)

// follower runs Follow in a goroutine and delivers the revs it sees.
func follower(t *testing.T, r store.Record, from int64) (<-chan int64, context.CancelFunc, <-chan error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	revs, done := make(chan int64, 1000), make(chan error, 1)
	go func() {
		done <- r.Follow(ctx, from, func(e store.Event) error { revs <- e.Rev; return nil })
	}()
	t.Cleanup(cancel)
	return revs, cancel, done
}

// expectRevs waits (at most 10 s) for revs from..to in order.
func expectRevs(t *testing.T, revs <-chan int64, from, to int64) {
	t.Helper()
	for want := from; want <= to; want++ {
		select {
		case got := <-revs:
			if got != want {
				t.Fatalf("Follow delivered rev %d, want %d", got, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("Follow did not deliver rev %d", want)
		}
	}
}

// TestFollow: a follower on another handle sees what is there, then each
// append as it commits; it keeps seeing them after its listening
// connection is killed (polling meanwhile, then listening again); it ends
// with ctx.
func TestFollow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := testConfig(t, testURL(t), testSchema(t))
	c.LocalDir = t.TempDir()
	u, _ := url.Parse(c.URL)
	q := u.Query()
	app := "obversa-follow-" + c.Schema
	q.Set("application_name", app)
	u.RawQuery = q.Encode()
	c.URL = u.String()
	b := openBackend(t, c, "ns")
	r, _ := lockedRun(t, b, "r")
	_, err := r.Append(ctx, 0, ev("a", 1), ev("b", 2))
	must(t, err)
	ro, err := b.OpenRunReadOnly(ctx, "r")
	must(t, err)
	defer ro.Close()
	revs, cancel, done := follower(t, ro, 2)
	t.Cleanup(func() {
		if t.Failed() {
			select {
			case err := <-done:
				t.Logf("Follow returned %v", err)
			default:
			}
		}
	})
	expectRevs(t, revs, 2, 2)
	for i := int64(3); i <= 5; i++ {
		_, err := r.Append(ctx, i-1, ev(fmt.Sprint(i), i))
		must(t, err)
		expectRevs(t, revs, i, i)
	}
	// Kill the listening connection: appends made while it is down are
	// still delivered.
	var killed int
	deadline := time.Now().Add(10 * time.Second)
	for killed == 0 && time.Now().Before(deadline) {
		must(t, b.pool.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
			WHERE application_name = $1 AND query ILIKE 'listen%'`, app).Scan(&killed))
		time.Sleep(10 * time.Millisecond)
	}
	if killed == 0 {
		t.Fatal("found no listening connection to kill")
	}
	for i := int64(6); i <= 8; i++ {
		_, err := r.Append(ctx, i-1, ev(fmt.Sprint(i), i))
		must(t, err)
		expectRevs(t, revs, i, i)
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Follow returned %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Follow did not end with its context")
	}
}

// TestFollowStopsOnError: an error from fn ends Follow with that error.
func TestFollowStopsOnError(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b, _ := newBackend(t)
	r, _ := lockedRun(t, b, "r")
	_, err := r.Append(ctx, 0, ev("a", 1), ev("b", 2))
	must(t, err)
	stop := errors.New("stop")
	n := 0
	if err := r.Follow(ctx, 1, func(store.Event) error { n++; return stop }); err != stop || n != 1 {
		t.Fatalf("Follow = %v after %d events, want stop after 1", err, n)
	}
}
