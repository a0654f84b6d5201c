package main

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestPGCrashWorkerInTransaction: a worker SIGKILLed in the middle of its
// append transaction — its events sent, the run's row locked, the insert
// held up by a lock the test holds — leaves its batch wholly in the record
// or wholly out of it; the watchdog restarts a worker, which carries the
// run on to its end, and the record verifies.
func TestPGCrashWorkerInTransaction(t *testing.T) {
	t.Parallel()
	db := pgStorage(t, "application_name=obv_txn")
	runFile, dir, _ := pgChain(t, "3")
	ctx := context.Background()
	// One connection holds the lock; another watches (a transaction sees
	// one snapshot of pg_stat_activity).
	blocker, watcher := db.connect(t, ctx), db.connect(t, ctx)
	defer blocker.Close(ctx)
	defer watcher.Close(ctx)
	run, out := startObversa(t, dir, nil, "run", "--storage", db.url, "--run-id", "t", runFile)
	waitFor(t, 60*time.Second, "the slow node to start", func() bool { return slowStarted(t, db, "t") })
	// Hold inserts into the events table: slow's result is the next
	// append, and its transaction stops at the insert.
	tx, err := blocker.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "LOCK TABLE "+db.schema+".events IN SHARE MODE"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the worker's append to wait at the insert", func() bool {
		var n int
		err := watcher.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE application_name = 'obv_txn'
			AND wait_event_type = 'Lock' AND query ILIKE '%INSERT INTO events%'`).Scan(&n)
		return err == nil && n > 0
	})
	before := len(db.events(t, "t", "graph:node-completed"))
	worker := runOnHost(t, db, "t", run.Process.Pid).worker
	if err := syscall.Kill(worker, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if code := exitCode(run.Wait()); code != 0 || !strings.Contains(out.String(), "complete: 3 nodes passed") {
		t.Fatalf("run: exit %d\n%s", code, out)
	}
	if v := obversa(t, dir, "verify", "--storage", db.url, "t"); v.code != 0 {
		t.Errorf("verify: exit %d: %s%s", v.code, v.stdout, v.stderr)
	}
	if n := len(db.events(t, "t", "run:worker-exited")); n != 1 {
		t.Errorf("%d worker crashes recorded, want 1", n)
	}
	slow := 0
	for _, e := range db.events(t, "t", "graph:node-completed") {
		if e["node"] == "slow" {
			slow++
		}
	}
	if slow != 1 {
		t.Errorf("slow completed %d times in the record, want once", slow)
	}
	t.Logf("the killed worker's batch was %s", map[bool]string{true: "committed whole", false: "not committed"}[before == 1 && slow == 1 && len(db.events(t, "t", "graph:node-resumed")) == 0])
}

// TestPGCrashWatchdogMidLease: the watchdog SIGKILLed while it holds the
// run's lease: its worker stops, status on the same host says the run is
// interrupted at once (the lease's holder is a dead process of this host
// and boot), and resume takes it over without waiting for the lease to
// expire (the default TTL, 30 s) and carries it to its end.
func TestPGCrashWatchdogMidLease(t *testing.T) {
	t.Parallel()
	db := pgStorage(t, "")
	runFile, dir, effects := pgChain(t, "3")
	run, _ := startObversa(t, dir, nil, "run", "--storage", db.url, "--run-id", "t", runFile)
	waitFor(t, 60*time.Second, "the slow node to start", func() bool { return slowStarted(t, db, "t") })
	host := runOnHost(t, db, "t", run.Process.Pid)
	c := db.connect(t, context.Background())
	if l := db.lease(t, context.Background(), c, "t"); !l.Held || l.Expired {
		t.Fatalf("the running run's lease: %+v", l)
	}
	c.Close(context.Background())
	if err := syscall.Kill(run.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = run.Wait()
	waitFor(t, 20*time.Second, "the run's processes to stop", func() bool { return len(host.marked(t)) == 0 })
	start := time.Now()
	waitFor(t, 10*time.Second, "status to say interrupted", func() bool { return pgStatus(t, dir, db, "", "t").Phase == "interrupted" })
	resume, out := startObversa(t, dir, nil, "resume", "--storage", db.url, "t")
	waitFor(t, 20*time.Second, "the takeover, well before the lease's TTL (30 s) ends", func() bool { return len(db.events(t, "t", "run:takeover")) == 1 })
	t.Logf("taken over %s after the watchdog's processes were gone", time.Since(start).Round(time.Millisecond))
	if code := exitCode(resume.Wait()); code != 0 || !strings.Contains(out.String(), "complete: 3 nodes passed") {
		t.Fatalf("resume: exit %d\n%s", code, out)
	}
	if v := obversa(t, dir, "verify", "--storage", db.url, "t"); v.code != 0 {
		t.Errorf("verify: exit %d: %s%s", v.code, v.stdout, v.stderr)
	}
	if got := effectLines(t, effects, "slow"); got != 1 {
		t.Errorf("slow finished %d times, want once (after the takeover)", got)
	}
}
