package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/obversa/obversa/host/launch"
	"github.com/obversa/obversa/host/watchdog"
	"github.com/obversa/obversa/store"
)

// holderTeardownRun is a run whose node waits for GATE; its processes get
// 10 minutes to end after TERM, so a process of the run that ignores TERM
// holds whoever stops it (a resume's start-up, the keeper) as long as the
// test wants.
const holderTeardownRun = `
teardown_grace = "10m"
plugin "shell" {
  type = "node"
  path = "BIN/cmd-engine"
}
graph "dag" {
  node "a" {
    binding    = "shell"
    retry_safe = true
    input      = { command = ["sh", "-c", "COMMAND"] }
  }
}
`

// lockHolderPID is the pid the run's lock file names, 0 when none.
func lockHolderPID(runDir string) int {
	b, err := os.ReadFile(filepath.Join(runDir, "lock"))
	if err != nil {
		return 0
	}
	var h store.Holder
	if json.Unmarshal(b, &h) != nil {
		return 0
	}
	return h.PID
}

// TestStopAskedBeforeAResumeTookTheRun: `obversa stop` asks its question
// on a terminal while the run is paused and nothing holds it; meanwhile
// `obversa resume` takes the run and is held in its start-up (it stops a
// process of the run that ignores TERM, with a 10-minute grace). The
// answer comes then: stop must reach the resume, which records STOPPED,
// rather than be refused PROCESS_LOCKED and leave the run to go on — and
// the record says it was stopped by request, as a stop of a running run
// records, not that no watchdog held it.
func TestStopAskedBeforeAResumeTookTheRun(t *testing.T) {
	t.Parallel()
	gate := filepath.Join(t.TempDir(), "gate")
	text := strings.Replace(holderTeardownRun, "COMMAND", "while [ ! -e "+gate+" ]; do sleep 0.05; done", 1)
	runFile := writeRunFile(t, text)
	dir := filepath.Dir(runFile)
	if r := obversa(t, dir, "plugin", "lock", runFile); r.code != 0 {
		t.Fatalf("lock: %s", r.stderr)
	}
	runDir := runDirOf(runFile, "sq")
	run, errb := startRun(t, dir, runFile, "sq")
	waitAttempts(t, runDir, 1, "the node's attempt")
	if r := obversa(t, dir, "stop", "--pause", runDir); r.code != 0 {
		t.Fatalf("stop --pause: exit %d: %s", r.code, r.stderr)
	}
	if err := run.Wait(); exitCode(err) != exitPaused {
		t.Fatalf("run: %v, want exit %d: %s", err, exitPaused, errb.String())
	}
	// A process of the run that ignores TERM: a resume stops it before
	// it takes the run over, and waits the grace for it.
	stubborn := exec.Command("sh", "-c", `trap "" TERM; read x`)
	stubborn.Env = append(os.Environ(), launch.OwnerEnv+"="+watchdog.OwnerMarker(runDir))
	in, err := stubborn.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := stubborn.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close(); _ = stubborn.Process.Kill(); _ = stubborn.Wait() })

	term := onTerminal(t, dir, nil, "stop", runDir)
	term.waitScreen(t, 60*time.Second, "stop's question", func(s string) bool { return strings.Contains(s, "Stop it for good? [y/N]") })
	resume := exec.Command(filepath.Join(binDir, "obversa"), "resume", runDir)
	resume.Dir = dir
	var rerr strings.Builder
	resume.Stderr = &rerr
	if err := resume.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = resume.Process.Kill() })
	waitFor(t, 60*time.Second, "the resume to hold the run", func() bool { return lockHolderPID(runDir) == resume.Process.Pid })
	if _, err := term.ptmx.WriteString("y\r"); err != nil {
		t.Fatal(err)
	}
	if code := term.wait(t); code != 0 {
		t.Fatalf("stop answered after a resume took the run: exit %d:\n%s", code, term.screen())
	}
	if s := term.screen(); !strings.Contains(s, "asked watchdog pid "+strconv.Itoa(resume.Process.Pid)) {
		t.Errorf("stop did not say it asked the resume (pid %d):\n%s", resume.Process.Pid, s)
	}
	done := make(chan error, 1)
	go func() { done <- resume.Wait() }()
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		t.Fatalf("the resume did not end after the stop (its grace is 10 minutes): %s", rerr.String())
	}
	if st := status(t, runDir); st.Phase != "stopped" {
		t.Errorf("phase %q after the stop, want stopped; resume said: %s", st.Phase, rerr.String())
	}
	if !exited(stubborn.Process.Pid) {
		t.Errorf("the run's process that ignores TERM outlived the stopped run")
	}
	wantStoppedByRequest(t, runDir)
}

// wantStoppedByRequest fails t unless the run's one result is STOPPED
// with the message of the operator's stop of a held run
// (watchdog.StoppedByRequest), as a stop of a running run records.
func wantStoppedByRequest(t *testing.T, runDir string) {
	t.Helper()
	res := recorded(t, runDir, "graph:run-finished")
	if len(res) != 1 {
		t.Fatalf("%d graph:run-finished events, want 1: %v", len(res), res)
	}
	out, _ := res[0]["output"].(map[string]any)
	if res[0]["code"] != "STOPPED" || out["message"] != watchdog.StoppedByRequest {
		t.Errorf("result %v, want STOPPED %q (the operator's stop of a held run)", res[0], watchdog.StoppedByRequest)
	}
}

// TestStopRefusesTheKeeper: while the run's keeper holds the run (both
// supervisors were killed, and it waits out the grace of a process that
// ignores TERM), `obversa stop` does not signal it — the keeper has no
// handler: Go ignores SIGUSR2 there, so the stop would be lost while stop
// said STOPPED was coming —
// but refuses PROCESS_LOCKED naming the keeper and what to do; done as it
// says, once the keeper is done, stop records STOPPED.
func TestStopRefusesTheKeeper(t *testing.T) {
	t.Parallel()
	// Relative to the workspace (the run file's directory), where the
	// command may write. It ignores HUP too: the keeper freezes it, and
	// when its plugin dies after that (late under load), its process
	// group is orphaned with a stopped member, so the kernel sends it
	// SIGHUP and SIGCONT (POSIX _exit); dead of the HUP, it let the
	// keeper end at once and the stop below take the run.
	runFile := writeRunFile(t, strings.Replace(holderTeardownRun, "COMMAND", `trap '' TERM HUP; echo x > started; while [ ! -e gate ]; do sleep 0.05; done`, 1))
	dir := filepath.Dir(runFile)
	gate, started := filepath.Join(dir, "gate"), filepath.Join(dir, "started")
	if r := obversa(t, dir, "plugin", "lock", runFile); r.code != 0 {
		t.Fatalf("lock: %s", r.stderr)
	}
	runDir := runDirOf(runFile, "sk")
	var keeper int
	t.Cleanup(func() {
		// A test that failed leaves nothing waiting out the 10 minutes.
		for _, p := range marked(t, runDir) {
			_ = syscall.Kill(p.PID, syscall.SIGKILL)
		}
		if keeper != 0 {
			_ = syscall.Kill(keeper, syscall.SIGKILL)
		}
	})
	run, errb := startRun(t, dir, runFile, "sk")
	waitFor(t, 60*time.Second, "the node's command", func() bool {
		if run.ProcessState != nil || exited(run.Process.Pid) {
			t.Fatalf("the run ended before its command started: %s", errb.String())
		}
		_, err := os.Stat(started)
		return err == nil
	})
	worker, err := readWorkerPID(runDir)
	if err != nil {
		t.Fatal(err)
	}
	_ = syscall.Kill(run.Process.Pid, syscall.SIGSTOP)
	_ = syscall.Kill(worker, syscall.SIGSTOP)
	_ = syscall.Kill(run.Process.Pid, syscall.SIGKILL)
	_ = syscall.Kill(worker, syscall.SIGKILL)
	_ = run.Wait()
	waitFor(t, 60*time.Second, "the keeper to hold the run", func() bool {
		keeper = keeperWith(t, "\x00--run-dir\x00"+runDir+"\x00")
		return keeper != 0 && lockHolderPID(runDir) == keeper
	})
	r := obversa(t, dir, "stop", "--yes", runDir)
	if r.code != exitUsage || !strings.Contains(r.stderr, "PROCESS_LOCKED") || !strings.Contains(r.stderr, "obversa keeper") {
		t.Fatalf("stop while the keeper holds the run: exit %d, want %d, PROCESS_LOCKED naming the keeper: %s%s (run: %s)", r.code, exitUsage, r.stdout, r.stderr, errb.String())
	}
	if exited(keeper) {
		t.Fatalf("stop ended the keeper: %s", r.stderr)
	}
	if r := obversa(t, dir, "stop", "--pause", runDir); r.code != exitUsage || !strings.Contains(r.stderr, "nothing to pause") {
		t.Errorf("stop --pause while the keeper holds the run: exit %d, want %d, nothing to pause: %s", r.code, exitUsage, r.stderr)
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, "the keeper to end", func() bool { return exited(keeper) })
	if r := obversa(t, dir, "stop", "--yes", runDir); r.code != 0 {
		t.Fatalf("stop once the keeper is done: exit %d: %s", r.code, r.stderr)
	}
	if st := status(t, runDir); st.Phase != "stopped" {
		t.Errorf("phase %q, want stopped", st.Phase)
	}
}

func TestCommandPathIn(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"/usr/bin/obversa", "resume", "r"}, "obversa resume"},
		{[]string{"obversa", "--storage", "postgres://h/db", "--namespace", "n", "resume", "r"}, "obversa resume"},
		{[]string{"obversa", "--storage=/s", "--raw", "approve", "r", "dag/a/1"}, "obversa approve"},
		{[]string{"obversa", "keeper", "--run-dir", "/x"}, "obversa keeper"},
		{[]string{"obversa", "run", "--run-id", "x", "run.hcl"}, "obversa run"},
		{[]string{"obversa", "preflight", "interrupt", "r"}, "obversa preflight interrupt"},
		{[]string{"obversa.test", "-test.run", "X"}, ""},
		{[]string{"obversa"}, ""},
		{nil, ""},
	} {
		if got := commandPathIn(c.args); got != c.want {
			t.Errorf("commandPathIn(%q) = %q, want %q", c.args, got, c.want)
		}
	}
}
