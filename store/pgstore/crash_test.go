package pgstore

import (
	"context"
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/obversa/obversa/store"
)

// waitBlocked waits until a connection with application_name app is
// waiting for a lock: its append transaction is under way and stuck.
func waitBlocked(t *testing.T, b *Backend, app string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		var n int
		must(t, b.pool.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
			WHERE application_name = $1 AND wait_event_type = 'Lock' AND state = 'active'`, app).Scan(&n))
		if n > 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no connection of %s is waiting for a lock", app)
}

// TestKillInAppendTransaction: an owner process SIGKILLed in the middle of
// an append transaction — stopped at the run's row lock (before anything
// is written), or at the insert of its events — leaves no part of its
// batch: the batch is wholly there or wholly absent, the chain verifies,
// and a new owner on the same host takes the run at once (the dead
// holder's process is gone) and appends after it.
func TestKillInAppendTransaction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b, c := newBackend(t)
	for _, stage := range []struct {
		name  string
		block string // what the test holds to stop the transaction
	}{
		{"at the row lock", `SELECT 1 FROM runs WHERE namespace = 'ns' AND run_id = $1 FOR UPDATE`},
		{"at the insert", `LOCK TABLE events IN SHARE MODE`},
	} {
		id := strings.ReplaceAll(stage.name, " ", "-")
		rec, err := b.CreateRun(ctx, id, store.Policy{})
		must(t, err)
		defer rec.Close()
		app := "pgstore-kill-" + c.Schema + "-" + id
		o := startOwner(t, c.Schema, id, store.HostName(), app)
		if got := o.do("lock"); got != "locked 1" {
			t.Fatalf("%s: %s", stage.name, got)
		}
		if got := o.do("append 0 2 first"); got != "ok 2" {
			t.Fatalf("%s: %s", stage.name, got)
		}
		tx, err := b.pool.Begin(ctx)
		must(t, err)
		args := []any{}
		if strings.Contains(stage.block, "$1") {
			args = append(args, id)
		}
		_, err = tx.Exec(ctx, stage.block, args...)
		must(t, err)
		o.send("append 2 5 second")
		waitBlocked(t, b, app)
		o.kill()
		must(t, tx.Commit(ctx))

		rev := waitSettled(t, b, id, app)
		if rev != 2 && rev != 7 {
			t.Fatalf("%s: after the kill the run is at rev %d: part of a batch is visible", stage.name, rev)
		}
		t.Logf("%s: the killed batch was %s", stage.name, map[bool]string{true: "committed whole", false: "not committed"}[rev == 7])
		if rep, err := b.Verify(ctx, id); err != nil || rep.Events != rev {
			t.Fatalf("%s: Verify after the kill = %+v, %v", stage.name, rep, err)
		}
		own, err := rec.Lock(ctx)
		if err != nil {
			t.Fatalf("%s: Lock after the same-host owner died: %v", stage.name, err)
		}
		if own.Epoch() != 2 {
			t.Fatalf("%s: new epoch %d, want 2", stage.name, own.Epoch())
		}
		if _, err := rec.Append(ctx, rev, ev("after", 1)); err != nil {
			t.Fatalf("%s: append after the crash: %v", stage.name, err)
		}
		must(t, own.Release())
	}
}

// waitSettled waits until the killed owner's connections are gone (the
// server has finished or rolled back its transaction) and returns the
// run's rev.
func waitSettled(t *testing.T, b *Backend, id, app string) int64 {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var n int
		must(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1`, app).Scan(&n))
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the killed owner's connections are still open")
		}
		time.Sleep(10 * time.Millisecond)
	}
	var rev, events int64
	must(t, b.pool.QueryRow(ctx, `SELECT rev, (SELECT count(*) FROM events WHERE namespace = 'ns' AND run_id = $1)
		FROM runs WHERE namespace = 'ns' AND run_id = $1`, id).Scan(&rev, &events))
	if rev != events {
		t.Fatalf("the run's head is rev %d but it holds %d events", rev, events)
	}
	return rev
}

// TestTakeoverAfterHolderDies: a lease holder on host a is SIGKILLed; host
// b is refused while the lease is unexpired (another host's process is
// never judged alive or dead), and takes the run once it expires, with the
// next epoch.
func TestTakeoverAfterHolderDies(t *testing.T) {
	t.Setenv(store.HostEnv, "b")
	ctx := context.Background()
	b, c := newBackend(t)
	rec, err := b.CreateRun(ctx, "r", store.Policy{})
	must(t, err)
	defer rec.Close()
	a := startOwner(t, c.Schema, "r", "a", "pgstore-takeover-"+c.Schema)
	if got := a.do("lock"); got != "locked 1" {
		t.Fatal(got)
	}
	if got := a.do("append 0 1 a"); got != "ok 1" {
		t.Fatal(got)
	}
	a.kill()
	killed := time.Now()
	var le *store.LockedError
	if _, err := rec.Lock(ctx); !errors.As(err, &le) || le.Holder.Host != "a" {
		t.Fatalf("Lock on host b right after a died: %v, want PROCESS_LOCKED by host a", err)
	}
	info, err := rec.(*Run).Lease(ctx)
	must(t, err)
	var own store.Ownership
	for {
		if own, err = rec.Lock(ctx); err == nil {
			break
		}
		if !errors.Is(err, store.ErrProcessLocked) || time.Since(killed) > 3*c.LeaseTTL {
			t.Fatalf("Lock on host b: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	defer own.Release()
	var now time.Time
	must(t, b.pool.QueryRow(ctx, `SELECT now()`).Scan(&now))
	if now.Before(info.ExpiresAt) {
		t.Fatalf("host b took the lease at %s, before it expired at %s", now, info.ExpiresAt)
	}
	if own.Epoch() != 2 || own.Holder().Host != "b" {
		t.Fatalf("takeover: epoch %d host %q", own.Epoch(), own.Holder().Host)
	}
	if _, err := rec.Append(ctx, 1, ev("b", 1)); err != nil {
		t.Fatal(err)
	}
}

// TestTwoOwners: two processes on two hosts, one database. Exactly one
// holds the lease at a time; the first is frozen (SIGSTOP) until its
// lease expires, the second takes over; when the first wakes, its append
// is refused with an error naming the new owner and epoch, and it learns
// its lease is lost. The record holds each owner's events under its epoch.
func TestTwoOwners(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b, c := newBackend(t)
	rec, err := b.CreateRun(ctx, "r", store.Policy{})
	must(t, err)
	defer rec.Close()
	a := startOwner(t, c.Schema, "r", "host-a", "pgstore-two-a-"+c.Schema)
	bb := startOwner(t, c.Schema, "r", "host-b", "pgstore-two-b-"+c.Schema)
	if got := a.do("lock"); got != "locked 1" {
		t.Fatal(got)
	}
	if got := bb.do("lock"); !strings.HasPrefix(got, "refused PROCESS_LOCKED") || !strings.Contains(got, `host "host-a"`) {
		t.Fatalf("second owner's lock: %s", got)
	}
	if got := a.do("append 0 2 a1"); got != "ok 2" {
		t.Fatal(got)
	}
	a.signal(syscall.SIGSTOP)
	if got := bb.do("lockwait"); got != "locked 2" {
		t.Fatalf("takeover: %s", got)
	}
	if got := bb.do("append 2 1 b1"); got != "ok 3" {
		t.Fatal(got)
	}
	a.signal(syscall.SIGCONT)
	got := a.do("append 2 1 a2")
	if !strings.HasPrefix(got, "err NOT_OWNER") || !strings.Contains(got, "epoch 1") || !strings.Contains(got, `host "host-b"`) ||
		!strings.Contains(got, "at epoch 2") {
		t.Fatalf("the stale owner's append: %s", got)
	}
	if got := a.do("lost"); got != "lost" {
		t.Fatalf("stale owner's lease: %s", got)
	}
	if got := bb.do("append 3 1 b2"); got != "ok 4" {
		t.Fatal(got)
	}
	rows, err := b.pool.Query(ctx, `SELECT id, epoch FROM events WHERE namespace = 'ns' AND run_id = 'r' ORDER BY rev`)
	must(t, err)
	type row struct {
		ID    string
		Epoch int64
	}
	got2, err := pgx.CollectRows(rows, pgx.RowToStructByPos[row])
	must(t, err)
	want := []row{{"a1-0", 1}, {"a1-1", 1}, {"b1-0", 2}, {"b2-0", 2}}
	if len(got2) != len(want) {
		t.Fatalf("events %v, want %v", got2, want)
	}
	for i := range want {
		if got2[i] != want[i] {
			t.Fatalf("events %v, want %v", got2, want)
		}
	}
	if _, err := b.Verify(ctx, "r"); err != nil {
		t.Fatal(err)
	}
}
