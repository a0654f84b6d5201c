package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/obversa/obversa/internal/proc"
)

// Ownership of a run kept in PostgreSQL across two simulated hosts (two
// processes with different OBVERSA_HOST names on one machine and one
// database), with the real binaries: a takeover once a dead host's lease
// expires, a frozen owner fenced after a takeover, a worker killed in the
// middle of its append transaction and a watchdog killed while it holds
// the lease.

// pgRunFile is a three-node chain: "first" and "slow" each leave a line
// in EFFECTS ("slow" after sleeping SLOW seconds); every node is
// retry-safe.
const pgRunFile = `
restart {
  max_restarts    = 2
  initial_backoff = "50ms"
}
teardown_grace = "1s"
plugin "shell" {
  type = "node"
  path = "BIN/cmd-engine"
}
graph "dag" {
  node "first" {
    binding    = "shell"
    input      = { command = ["sh", "-c", "echo first >> EFFECTS"] }
    retry_safe = true
  }
  node "slow" {
    binding    = "shell"
    depends_on = ["first"]
    input      = { command = ["sh", "-c", "sleep SLOW; echo slow >> EFFECTS"] }
    retry_safe = true
  }
  node "last" {
    binding    = "shell"
    depends_on = ["slow"]
    input      = { command = ["true"] }
    retry_safe = true
  }
}
`

// pgChain writes pgRunFile with slow sleeping the given seconds, pins its
// plugin, and returns the run file, its directory and the effects file.
func pgChain(t *testing.T, slow string) (runFile, dir, effectsFile string) {
	t.Helper()
	dir = t.TempDir()
	effectsFile = filepath.Join(dir, "effects.log")
	text := strings.NewReplacer("BIN/", binDir+"/", "EFFECTS", effectsFile, "SLOW", slow).Replace(pgRunFile)
	runFile = filepath.Join(dir, "run.hcl")
	if err := os.WriteFile(runFile, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := obversa(t, dir, "plugin", "lock", runFile); r.code != 0 {
		t.Fatalf("lock: %s", r.stderr)
	}
	return runFile, dir, effectsFile
}

// effectLines counts the lines of the effects file that are word.
func effectLines(t *testing.T, path, word string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	n := 0
	for _, l := range strings.Split(string(b), "\n") {
		if l == word {
			n++
		}
	}
	return n
}

// slowStarted reports whether the run's "slow" node has an attempt
// started.
func slowStarted(t *testing.T, db pgDB, id string) bool {
	for _, e := range db.events(t, id, "graph:node-attempt-started") {
		if e["node"] == "slow" {
			return true
		}
	}
	return false
}

// TestPGTakeoverAfterHostDies: a run started on host a, whose watchdog,
// worker, keeper and every other process are then SIGKILLed (the host
// died), is refused to host b while a's lease lasts — naming a and the
// forced takeover — and taken over by `obversa resume` on host b once the
// lease has expired; it completes there and verifies.
func TestPGTakeoverAfterHostDies(t *testing.T) {
	t.Parallel()
	// The lease outlasts, by far, the time from the kill to host b's first
	// resume, also on a loaded machine (it renews every third of its TTL,
	// so at least 40 s are left when the host dies); the test then ends it
	// itself (expireLease) rather than waiting for it.
	db := pgStorage(t, "lease_ttl=60s")
	runFile, dir, effects := pgChain(t, "30")
	a, _ := startObversa(t, dir, []string{"OBVERSA_HOST=host-a"}, "run", "--storage", db.url, "--run-id", "t", runFile)
	waitFor(t, 60*time.Second, "the slow node to start on host a", func() bool { return slowStarted(t, db, "t") })
	hostA := runOnHost(t, db, "t", a.Process.Pid)
	hostA.kill(t, keeperOf(t, db.schema, "t"))
	_ = a.Wait()
	waitFor(t, 10*time.Second, "host a's processes to be gone", func() bool { return len(hostA.marked(t)) == 0 })

	b := newOtherHost(t, "host-b", dir)
	r := b.run(t, "resume", "--storage", db.url, "t")
	if r.code != exitUsage || !strings.Contains(r.stderr, "PROCESS_LOCKED") || !strings.Contains(r.stderr, `host "host-a"`) ||
		!strings.Contains(r.stderr, "--force-takeover") {
		t.Fatalf("resume on host b while a's lease lasts: exit %d, want %d naming host-a and --force-takeover:\n%s", r.code, exitUsage, r.stderr)
	}
	// From host b the dead host's pid tells nothing: only the lease's
	// expiry makes the run interrupted. It expires now, as it would once
	// its TTL had passed without a renewal.
	db.expireLease(t, "t")
	waitFor(t, 30*time.Second, "host b to see the run interrupted", func() bool {
		return pgStatus(t, dir, db, "host-b", "t").Phase == "interrupted"
	})
	// Host b has its own disk: its plugin cache is filled from the
	// plugins' pinned paths.
	r = b.run(t, "resume", "--storage", db.url, "t")
	if r.code != 0 || !strings.Contains(r.stdout, "complete: 3 nodes passed") {
		t.Fatalf("resume on host b: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if v := obversa(t, dir, "verify", "--storage", db.url, "t"); v.code != 0 || !strings.HasPrefix(v.stdout, "ok: ") {
		t.Errorf("verify: exit %d: %s%s", v.code, v.stdout, v.stderr)
	}
	if n := len(db.events(t, "t", "run:takeover")); n != 1 {
		t.Errorf("%d takeovers recorded, want 1", n)
	}
	if got := effectLines(t, effects, "first"); got != 1 {
		t.Errorf("first ran %d times, want once (completed before the host died)", got)
	}
	if got := effectLines(t, effects, "slow"); got != 0 {
		t.Errorf("slow finished %d times on host a, want never (it died first)", got)
	}
	if got := effectLines(t, filepath.Join(b.view, filepath.Base(effects)), "slow"); got != 1 {
		t.Errorf("slow finished %d times on host b, want once", got)
	}
}

// TestPGTwoWatchdogs: two watchdogs on two hosts, one database. While
// host a owns the run, host b's resume is refused; when a freezes (a
// stopped VM), b takes the run over once a's lease expires and runs it to
// its end. Thawed, a's worker finishes its attempt and its late append is
// refused, naming host b's lease, and a's watchdog stops, saying its
// ownership was lost. Sampled all along, the lease has exactly one holder
// per epoch and never goes back.
func TestPGTwoWatchdogs(t *testing.T) {
	t.Parallel()
	db := pgStorage(t, "lease_ttl=2s")
	runFile, dir, effects := pgChain(t, "4")
	samples, stopSampling := sampleLeases(t, db, "t")
	a, aOut := startObversa(t, dir, []string{"OBVERSA_HOST=host-a"}, "run", "--storage", db.url, "--run-id", "t", runFile)
	waitFor(t, 60*time.Second, "the slow node to start on host a", func() bool { return slowStarted(t, db, "t") })
	hostA := runOnHost(t, db, "t", a.Process.Pid)
	b := newOtherHost(t, "host-b", dir)
	if r := b.run(t, "resume", "--storage", db.url, "t"); r.code != exitUsage || !strings.Contains(r.stderr, "PROCESS_LOCKED") {
		t.Fatalf("resume on host b while a runs: exit %d, want %d PROCESS_LOCKED:\n%s", r.code, exitUsage, r.stderr)
	}
	// Host a freezes: its watchdog, worker, plugins and commands.
	if err := syscall.Kill(a.Process.Pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	frozen := proc.FreezeTree("OBVERSA_RUN_OWNER="+hostA.marker, nil)
	thawed := false
	defer func() {
		if !thawed {
			proc.Thaw(frozen)
			_ = syscall.Kill(a.Process.Pid, syscall.SIGCONT)
		}
	}()
	waitFor(t, 20*time.Second, "host b to see the run interrupted", func() bool {
		return pgStatus(t, dir, db, "host-b", "t").Phase == "interrupted"
	})
	bRun, bOut := b.start(t, "resume", "--storage", db.url, "t")
	waitFor(t, 30*time.Second, "host b's takeover", func() bool { return len(db.events(t, "t", "run:takeover")) == 1 })

	// Host a's worker wakes first: its attempt ends and its append is
	// refused.
	proc.Thaw(frozen)
	waitFor(t, 30*time.Second, "host a's worker to end", func() bool { return exited(hostA.worker) })
	_ = syscall.Kill(a.Process.Pid, syscall.SIGCONT)
	thawed = true
	if code := exitCode(a.Wait()); code != exitFailed {
		t.Errorf("host a's watchdog exited %d, want %d:\n%s", code, exitFailed, aOut)
	}
	if out := aOut.String(); !strings.Contains(out, "NOT_OWNER") || !strings.Contains(out, "ownership was lost") || !strings.Contains(out, `host "host-b"`) {
		t.Errorf("host a's watchdog does not say its ownership was lost to host b:\n%s", out)
	}
	log, _ := os.ReadFile(filepath.Join(dir, ".obversa", "default", "runs", "t", "worker.log"))
	if !strings.Contains(string(log), "stale and its write was refused") || !strings.Contains(string(log), `host "host-b"`) {
		t.Errorf("worker.log does not show host a's late append refused, naming host b:\n%s", log)
	}

	if code := exitCode(bRun.Wait()); code != 0 || !strings.Contains(bOut.String(), "complete: 3 nodes passed") {
		t.Fatalf("host b's resume: exit %d\n%s", code, bOut)
	}
	stopSampling()
	if v := obversa(t, dir, "verify", "--storage", db.url, "t"); v.code != 0 {
		t.Errorf("verify: exit %d: %s%s", v.code, v.stdout, v.stderr)
	}
	slowDone := 0
	for _, e := range db.events(t, "t", "graph:node-completed") {
		if e["node"] == "slow" {
			slowDone++
		}
	}
	if slowDone != 1 {
		t.Errorf("slow completed %d times in the record, want once (host a's completion was refused)", slowDone)
	}
	// What a's command did outside the record is not undone.
	if a, b := effectLines(t, effects, "slow"), effectLines(t, filepath.Join(b.view, filepath.Base(effects)), "slow"); a != 1 || b != 1 {
		t.Errorf("slow's command finished %d times on host a and %d on host b, want once on each", a, b)
	}
	checkOneOwner(t, *samples)
}

// exited reports whether pid has ended (or is a zombie waiting for its
// frozen parent).
func exited(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	i := strings.LastIndexByte(string(b), ')')
	return i > 0 && len(b) > i+2 && b[i+2] == 'Z'
}

// sampleLeases reads run id's lease every 25 ms until the returned func
// is called.
func sampleLeases(t *testing.T, db pgDB, id string) (*[]lease, func()) {
	t.Helper()
	var out []lease
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		c, err := pgx.Connect(ctx, db.conn)
		if err != nil {
			return
		}
		defer c.Close(context.Background())
		for ctx.Err() == nil {
			var l lease
			err := c.QueryRow(ctx, `SELECT epoch, holder_host, holder_pid, lease_held, coalesce(lease_expires_at <= now(), true) FROM `+
				db.schema+`.runs WHERE run_id = $1`, id).Scan(&l.Epoch, &l.Host, &l.PID, &l.Held, &l.Expired)
			if err == nil {
				out = append(out, l)
			}
			time.Sleep(25 * time.Millisecond)
		}
	}()
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			cancel()
			wg.Wait()
		}
	}
	t.Cleanup(stop)
	return &out, stop
}

// checkOneOwner checks the sampled leases: the epoch never goes back,
// each epoch has one holder, host a held epoch 1 and host b epoch 2.
func checkOneOwner(t *testing.T, samples []lease) {
	t.Helper()
	holders := map[int64]string{}
	var last int64
	for _, s := range samples {
		if s.Epoch == 0 {
			continue
		}
		if s.Epoch < last {
			t.Fatalf("the lease went back from epoch %d to %d", last, s.Epoch)
		}
		last = s.Epoch
		h := s.Host + "/" + strconv.Itoa(s.PID)
		if prev, ok := holders[s.Epoch]; ok && prev != h {
			t.Fatalf("epoch %d had two holders: %s and %s", s.Epoch, prev, h)
		}
		holders[s.Epoch] = h
	}
	if !strings.HasPrefix(holders[1], "host-a/") || !strings.HasPrefix(holders[2], "host-b/") {
		t.Errorf("holders by epoch %v, want host-a at 1 and host-b at 2", holders)
	}
	t.Logf("%d samples; holders by epoch: %v", len(samples), holders)
}
