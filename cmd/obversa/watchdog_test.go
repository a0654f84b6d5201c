package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/obversa/obversa/host/runstate"
	"github.com/obversa/obversa/host/watchdog"
	"github.com/obversa/obversa/internal/failpoint"
)

// watchdogRunFile is a two-node graph: "fast" appends to FAST, then
// "slow" runs SLOWCMD. RESTART and LIMITS fill the restart and limits
// blocks; WRITE lists the directories besides the workspace the commands
// may write (docs/confinement.md): FAST's and the test's flag files'.
const watchdogRunFile = `
restart {
  RESTART
}
limits {
  LIMITS
}
teardown_grace = "1s"
plugin "shell" {
  type = "node"
  path = "BIN/cmd-engine"
  confine {
    write = WRITE
  }
}
graph "dag" {
  node "fast" {
    binding    = "shell"
    input      = { command = ["sh", "-c", "echo x >> FAST"] }
    retry_safe = true
  }
  node "slow" {
    binding    = "shell"
    depends_on = ["fast"]
    input      = { command = ["sh", "-c", "SLOWCMD"] }
    retry_safe = SLOWSAFE
  }
}
`

type watchdogCase struct {
	restart, limits, slow string
	// unsafe makes the slow node not retry-safe.
	unsafe bool
	// writes lists directories outside the run file's the slow command
	// writes to.
	writes []string
}

func (c watchdogCase) write(t *testing.T) (runFile, dir, fast string) {
	t.Helper()
	dir = t.TempDir()
	fast = filepath.Join(dir, "fast.log")
	write, err := json.Marshal(append([]string{dir}, c.writes...))
	if err != nil {
		t.Fatal(err)
	}
	text := strings.NewReplacer("SLOWSAFE", fmt.Sprint(!c.unsafe), "RESTART", c.restart, "LIMITS", c.limits, "SLOWCMD", c.slow, "WRITE", string(write),
		"FAST", fast, "BIN/", binDir+"/", "DIR", dir).Replace(watchdogRunFile)
	runFile = filepath.Join(dir, "run.hcl")
	if err := os.WriteFile(runFile, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := obversa(t, dir, "plugin", "lock", runFile); r.code != 0 {
		t.Fatalf("lock: %s", r.stderr)
	}
	return runFile, dir, fast
}

func TestRestartExhausted(t *testing.T) {
	t.Parallel()
	runFile, dir, _ := watchdogCase{restart: `max_restarts = 1
  initial_backoff = "50ms"`, limits: `timeout = "1m"`, slow: "true"}.write(t)
	r := obversaEnv(t, dir, []string{failpoint.Env + "=after-dispatch:fast:-"}, "run", "--run-id", "x", runFile)
	runDir := runDirOf(runFile, "x")
	st := status(t, runDir)
	res := recorded(t, runDir, "graph:run-finished")
	if r.code != exitFailed || len(res) != 1 || res[0]["code"] != watchdog.CodeRestartExhausted || st.RestartCount != 1 {
		t.Fatalf("exit %d, result %v, restarts %d: %s", r.code, res, st.RestartCount, r.stderr)
	}
	if n := len(recorded(t, runDir, runstate.EventWorkerExited)); n != 2 {
		t.Fatalf("%d worker crashes recorded, want 2", n)
	}
}

func TestTimeoutDuringBackoff(t *testing.T) {
	t.Parallel()
	runFile, dir, _ := watchdogCase{restart: `max_restarts = 3
  initial_backoff = "30s"
  max_backoff = "30s"`, limits: `timeout = "2s"`, slow: "true"}.write(t)
	start := time.Now()
	r := obversaEnv(t, dir, []string{failpoint.Env + "=after-dispatch:fast:" + filepath.Join(dir, "flag")}, "run", "--run-id", "x", runFile)
	res := recorded(t, runDirOf(runFile, "x"), "graph:run-finished")
	if r.code != exitFailed || len(res) != 1 || res[0]["code"] != watchdog.CodeTimeout {
		t.Fatalf("exit %d, result %v: %s", r.code, res, r.stderr)
	}
	if el := time.Since(start); el > 15*time.Second {
		t.Fatalf("the timeout took %s to stop a 30 s backoff", el)
	}
	// Resuming after the deadline returns TIMEOUT without a worker.
	before := len(recorded(t, runDirOf(runFile, "x"), runstate.EventWorkerStarted))
	obversa(t, dir, "resume", runDirOf(runFile, "x"))
	if after := len(recorded(t, runDirOf(runFile, "x"), runstate.EventWorkerStarted)); after != before {
		t.Fatalf("resume after the deadline started a worker")
	}
}

func TestOutputLimit(t *testing.T) {
	t.Parallel()
	runFile, dir, _ := watchdogCase{restart: `max_restarts = 3`, limits: `timeout = "1m"`, slow: "true"}.write(t)
	r := obversaEnv(t, dir, []string{failpoint.Env + "=flood::-"}, "run", "--run-id", "x", runFile)
	runDir := runDirOf(runFile, "x")
	res := recorded(t, runDir, "graph:run-finished")
	if r.code != exitFailed || len(res) != 1 || res[0]["code"] != watchdog.CodeOutputLimit {
		t.Fatalf("exit %d, result %v: %s", r.code, res, r.stderr)
	}
	if n := len(recorded(t, runDir, runstate.EventWorkerStarted)); n != 1 {
		t.Fatalf("%d workers started, want 1 (no restart after OUTPUT_LIMIT)", n)
	}
	if fi, err := os.Stat(filepath.Join(runDir, "worker.log")); err != nil || fi.Size() > watchdog.MaxWorkerOutput {
		t.Fatalf("worker.log: %v, size %d", err, fi.Size())
	}
}

// TestSetsidGrandchildIsStopped: a command starts a grandchild that calls
// setsid and ignores SIGTERM; once the run ends no process carries the
// run's marker.
func TestSetsidGrandchildIsStopped(t *testing.T) {
	t.Parallel()
	slow := `setsid sh -c 'trap \"\" TERM; while :; do sleep 1; done' </dev/null >/dev/null 2>&1 & echo spawned`
	runFile, dir, _ := watchdogCase{restart: `max_restarts = 0`, limits: `timeout = "1m"`, slow: slow}.write(t)
	r := obversa(t, dir, "run", "--run-id", "x", runFile)
	runDir := runDirOf(runFile, "x")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if ps := marked(t, runDir); len(ps) != 0 {
		t.Fatalf("processes of the run survive: %+v", ps)
	}
}

// TestWatchdogKilled: SIGKILL the watchdog mid-run; the worker and its
// processes go within teardown_grace + 2 s; resume takes the run over and
// completes without repeating the completed node.
func TestWatchdogKilled(t *testing.T) {
	t.Parallel()
	dir0 := t.TempDir()
	flag := filepath.Join(dir0, "slow.flag")
	slow := "if [ -f " + flag + " ]; then echo second; else touch " + flag + "; sleep 60; fi"
	runFile, dir, fast := watchdogCase{restart: `max_restarts = 0`, limits: `timeout = "5m"`, slow: slow, writes: []string{dir0}}.write(t)
	cmd, errb := startRun(t, dir, runFile, "x")
	runDir := runDirOf(runFile, "x")
	waitFor(t, 30*time.Second, "the slow node to start", func() bool { _, err := os.Stat(flag); return err == nil })
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	waitFor(t, 3*time.Second, "every process of the run to stop", func() bool { return len(marked(t, runDir)) == 0 })
	if st := status(t, runDir); st.Phase != "interrupted" {
		t.Fatalf("status after the watchdog died: phase %q, want interrupted", st.Phase)
	}
	statusOfInterrupted(t, dir, runDir)
	r := obversa(t, dir, "resume", runDir)
	if r.code != 0 {
		t.Fatalf("resume: exit %d: %s\nfirst watchdog: %s", r.code, r.stderr, errb.String())
	}
	if n := effects(t, fast); n != 1 {
		t.Fatalf("the completed node ran %d times", n)
	}
	if n := len(recorded(t, runDir, runstate.EventTakeover)); n != 1 {
		t.Fatalf("%d takeovers recorded", n)
	}
}

// statusOfInterrupted checks the status of the interrupted run in runDir
// whose slow node was cut off: it claims no activity, but says since when
// nothing carried the run on (its last event), and the cut-off position's
// time stops there, so two reports agree.
func statusOfInterrupted(t *testing.T, dir, runDir string) {
	t.Helper()
	type report struct {
		InterruptedAt *time.Time `json:"interrupted_at"`
		Active        []struct {
			Position  string `json:"position"`
			ElapsedMS int64  `json:"elapsed_ms"`
		} `json:"active"`
	}
	var reps [2]report
	for i := range reps {
		if i > 0 {
			time.Sleep(20 * time.Millisecond)
		}
		r := obversa(t, dir, "status", "--json", runDir)
		if err := json.Unmarshal([]byte(r.stdout), &reps[i]); err != nil {
			t.Fatalf("status --json: %v: %s %s", err, r.stdout, r.stderr)
		}
	}
	events := strings.Split(strings.TrimSpace(obversa(t, dir, "events", "--json", runDir).stdout), "\n")
	var last struct {
		TS time.Time `json:"ts"`
	}
	if err := json.Unmarshal([]byte(events[len(events)-1]), &last); err != nil || last.TS.IsZero() {
		t.Fatalf("last event %q: %v", events[len(events)-1], err)
	}
	a, b := reps[0], reps[1]
	if a.InterruptedAt == nil || !a.InterruptedAt.Equal(last.TS) || len(a.Active) != 1 || a.Active[0].Position != "dag/slow/1" ||
		len(b.Active) != 1 || b.Active[0].ElapsedMS != a.Active[0].ElapsedMS {
		t.Fatalf("status of an interrupted run: %+v then %+v; want interrupted_at %s (the last event) and dag/slow/1's time stopped there", a, b, last.TS)
	}
	r := obversa(t, dir, "status", runDir)
	since := "\nsince:    " + last.TS.UTC().Format(time.RFC3339) + " (its last recorded event; nothing has carried the run on since)\n"
	cut := fmt.Sprintf("\ncut off:  dag/slow/1, started %d ms before the run's last recorded event", a.Active[0].ElapsedMS)
	if strings.Contains(r.stdout, "active:") || !strings.Contains(r.stdout, since) || !strings.Contains(r.stdout, cut) {
		t.Fatalf("status of an interrupted run claims activity or does not say since when:\n%s", r.stdout)
	}
}

// TestProcessLocked: while a watchdog holds a run, a second run of the
// same id and a resume are refused (exit 2) PROCESS_LOCKED, naming the
// watchdog's pid and command; `obversa stop` stops it.
func TestProcessLocked(t *testing.T) {
	t.Parallel()
	runFile, dir, _ := watchdogCase{restart: `max_restarts = 0`, limits: `timeout = "5m"`, slow: "sleep 60"}.write(t)
	cmd, _ := startRun(t, dir, runFile, "x")
	runDir := runDirOf(runFile, "x")
	waitAttempts(t, runDir, 2, "the slow node to start")
	for _, args := range [][]string{{"run", "--run-id", "x", runFile}, {"resume", runDir}} {
		r := obversa(t, dir, args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, "PROCESS_LOCKED") || !strings.Contains(r.stderr, fmt.Sprintf("pid %d ", cmd.Process.Pid)) ||
			!strings.Contains(r.stderr, "`obversa run`") {
			t.Errorf("%v: exit %d: %s", args, r.code, r.stderr)
		}
	}
	if r := obversa(t, dir, "stop", "--yes", runDir); r.code != 0 {
		t.Fatalf("stop: exit %d: %s", r.code, r.stderr)
	}
	if code := exitCode(cmd.Wait()); code != exitFailed {
		t.Fatalf("stopped run exited %d", code)
	}
	res := recorded(t, runDir, "graph:run-finished")
	if len(res) != 1 || res[0]["code"] != watchdog.CodeStopped {
		t.Fatalf("result %v, want STOPPED", res)
	}
	if ps := marked(t, runDir); len(ps) != 0 {
		t.Fatalf("processes of the run survive the stop: %+v", ps)
	}
}

// TestWorkspaceDriftDuringBackoff: a file of the workspace changes while
// the watchdog backs off after a crash → the run pauses WORKSPACE_DRIFT;
// resume refuses until the file is restored, then completes.
func TestWorkspaceDriftDuringBackoff(t *testing.T) {
	t.Parallel()
	runFile, dir, _ := watchdogCase{restart: `max_restarts = 2
  initial_backoff = "3s"
  max_backoff = "3s"`, limits: `timeout = "2m"`, slow: "true"}.write(t)
	ws := filepath.Join(dir, "ws")
	data := filepath.Join(ws, "data.txt")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(data, []byte("original\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	text, err := os.ReadFile(runFile)
	if err != nil {
		t.Fatal(err)
	}
	text = append([]byte("workspace {\n  root = \"ws\"\n  provider = \"files\"\n}\n"), text...)
	if err := os.WriteFile(runFile, text, 0o644); err != nil {
		t.Fatal(err)
	}
	flag := filepath.Join(t.TempDir(), "flag")
	cmd, errb := startRun(t, dir, runFile, "x", failpoint.Env+"=after-dispatch:fast:"+flag)
	runDir := runDirOf(runFile, "x")
	waitFor(t, 30*time.Second, "the crash snapshot", func() bool {
		if _, err := os.Stat(filepath.Join(runDir, "events.jsonl")); err != nil {
			return false
		}
		return len(recorded(t, runDir, runstate.EventWorkspaceSnapshot)) == 1
	})
	if err := os.WriteFile(data, []byte("edited during backoff\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code := exitCode(cmd.Wait()); code != exitPaused {
		t.Fatalf("run exited %d, want %d (paused): %s", code, exitPaused, errb.String())
	}
	waiting := recorded(t, runDir, "graph:run-waiting")
	if len(waiting) != 1 || waiting[0]["code"] != watchdog.CodeWorkspaceDrift {
		t.Fatalf("run-waiting %v, want WORKSPACE_DRIFT", waiting)
	}
	if r := obversa(t, dir, "resume", runDir); r.code == 0 || !strings.Contains(r.stderr, "WORKSPACE_DRIFT") || !strings.Contains(r.stderr, "data.txt") {
		t.Fatalf("resume with the edit in place: exit %d: %s", r.code, r.stderr)
	}
	if err := os.WriteFile(data, []byte("original\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := obversa(t, dir, "resume", runDir); r.code != 0 {
		t.Fatalf("resume after restoring: exit %d: %s", r.code, r.stderr)
	}
}

// TestTakeoverAfterWatchdogAndWorkerKilled: watchdog and worker die
// together while a setsid grandchild of the run lives on. The survivor
// must not hold the run lock: resume stops it and takes the run over.
func TestTakeoverAfterWatchdogAndWorkerKilled(t *testing.T) {
	t.Parallel()
	dir0 := t.TempDir()
	flag := filepath.Join(dir0, "slow.flag")
	slow := "if [ -f " + flag + " ]; then echo second; else touch " + flag + "; setsid sleep 300 </dev/null >/dev/null 2>&1 & sleep 60; fi"
	runFile, dir, _ := watchdogCase{restart: `max_restarts = 0`, limits: `timeout = "5m"`, slow: slow, writes: []string{dir0}}.write(t)
	cmd, _ := startRun(t, dir, runFile, "x")
	runDir := runDirOf(runFile, "x")
	waitFor(t, 30*time.Second, "the slow node to start", func() bool { _, err := os.Stat(flag); return err == nil })
	// The run's keeper would stop the grandchild itself once both
	// supervisors are gone, racing the resume this test is about: it is
	// held stopped (before it takes the run's lock) until resume is done.
	keeper := keeperWith(t, "\x00--run-dir\x00"+runDir+"\x00")
	if keeper == 0 {
		t.Fatal("the run has no keeper")
	}
	_ = syscall.Kill(keeper, syscall.SIGSTOP)
	t.Cleanup(func() { _ = syscall.Kill(keeper, syscall.SIGCONT) })
	worker := workerPID(t, runDir)
	_ = syscall.Kill(worker, syscall.SIGKILL)
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	waitFor(t, 5*time.Second, "the setsid grandchild to be the only survivor", func() bool {
		for _, p := range marked(t, runDir) {
			b, _ := os.ReadFile(filepath.Join("/proc", fmt.Sprint(p.PID), "cmdline"))
			if strings.HasPrefix(string(b), "sleep\x00300") {
				return true
			}
		}
		return false
	})
	r := obversa(t, dir, "resume", runDir)
	if r.code != 0 {
		t.Fatalf("resume: exit %d: %s", r.code, r.stderr)
	}
	if ps := marked(t, runDir); len(ps) != 0 {
		t.Fatalf("processes of the run survive the takeover: %+v", ps)
	}
}
