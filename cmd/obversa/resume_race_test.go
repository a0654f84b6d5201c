package main

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/obversa/obversa/internal/testutil"
)

// TestResumeRace: two `obversa resume` of one paused run, started
// together. One takes the run and carries it on; the other is refused
// (exit 2, PROCESS_LOCKED: nothing was done), naming the winner's pid and
// command and `obversa status`, and records nothing.
func TestResumeRace(t *testing.T) {
	t.Parallel()
	runFile, dir, _ := watchdogCase{restart: `max_restarts = 0`, limits: `timeout = "5m"`, slow: "sleep 60"}.write(t)
	run, _ := startRun(t, dir, runFile, "x")
	runDir := runDirOf(runFile, "x")
	waitAttempts(t, runDir, 2, "the slow node to start")
	if r := obversa(t, dir, "stop", "--pause", runDir); r.code != 0 {
		t.Fatalf("stop --pause: exit %d: %s", r.code, r.stderr)
	}
	if code := exitCode(run.Wait()); code != exitPaused {
		t.Fatalf("the paused run exited %d, want %d", code, exitPaused)
	}
	type resume struct {
		cmd  *exec.Cmd
		out  *testutil.SyncBuffer
		done chan int
	}
	var rs [2]*resume
	for i := range rs {
		cmd := exec.Command(filepath.Join(binDir, "obversa"), "resume", runDir)
		cmd.Dir = dir
		rs[i] = &resume{cmd: cmd, done: make(chan int, 1)}
	}
	for _, r := range rs {
		r.out = startCmd(t, r.cmd)
	}
	for _, r := range rs {
		go func() { r.done <- exitCode(r.cmd.Wait()) }()
	}
	var loser, winner *resume
	var code int
	select {
	case code = <-rs[0].done:
		loser, winner = rs[0], rs[1]
	case code = <-rs[1].done:
		loser, winner = rs[1], rs[0]
	case <-time.After(45 * time.Second):
		t.Fatalf("neither resume ended within 45 s:\n%s\n%s", rs[0].out, rs[1].out)
	}
	msg := loser.out.String()
	t.Logf("the losing resume said: %s", msg)
	for _, want := range []string{"PROCESS_LOCKED", fmt.Sprintf("pid %d ", winner.cmd.Process.Pid), "`obversa resume`",
		"nothing was done", "obversa status " + runDir} {
		if !strings.Contains(msg, want) {
			t.Errorf("the losing resume's message lacks %q:\n%s", want, msg)
		}
	}
	if code != exitUsage {
		t.Errorf("the losing resume exited %d, want %d (refused)", code, exitUsage)
	}
	waitFor(t, 30*time.Second, "the winner to take the run over", func() bool {
		return len(recorded(t, runDir, "run:takeover")) > 0
	})
	if n := len(recorded(t, runDir, "run:takeover")); n != 1 {
		t.Errorf("%d takeovers recorded, want the winner's alone", n)
	}
	if r := obversa(t, dir, "stop", "--yes", runDir); r.code != 0 {
		t.Fatalf("stop: exit %d: %s", r.code, r.stderr)
	}
	select {
	case <-winner.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("the winning resume did not end after stop:\n%s", winner.out)
	}
}

// TestLockedRefusalWithoutALiveHolder: a resume refused while the run's
// lock is taken by a process that records no holder (here flock(1); a
// losing concurrent resume meets the same once the winner, which took the
// run only to check it, has let it go) says that no live process is
// recorded as holding the run, that the last recorded holder (the run
// that paused) has ended, and to run the command again — not that the
// dead holder locks it, nor a hint about "its worker" or "that watchdog";
// stop says the same.
func TestLockedRefusalWithoutALiveHolder(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("flock"); err != nil {
		t.Skip("needs util-linux's flock")
	}
	runFile, dir := rulesRun(t, "", "", "graph \"dag\" {\n  approval = [\"gate\"]\n  node \"gate\" {\n    binding = \"shell\"\n    input = { command = [\"true\"] }\n  }\n}\n")
	if r := obversa(t, dir, "run", "--run-id", "held", runFile); r.code != exitPaused {
		t.Fatalf("run: exit %d: %s", r.code, r.stderr)
	}
	runDir := runDirOf(runFile, "held")
	hold := exec.Command("flock", "--exclusive", filepath.Join(runDir, "lock"), "sleep", "60")
	if err := hold.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hold.Process.Kill(); _ = hold.Wait() })
	waitFor(t, 30*time.Second, "flock to take the run's lock", func() bool {
		return exec.Command("flock", "--nonblock", "--shared", filepath.Join(runDir, "lock"), "true").Run() != nil
	})
	for _, args := range [][]string{{"resume", runDir}, {"stop", "--yes", runDir}} {
		r := obversa(t, dir, args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, "PROCESS_LOCKED: run "+runDir+" was locked by another process, but no live process is recorded as holding it now") ||
			!strings.Contains(r.stderr, "(the last recorded holder, pid ") ||
			!strings.Contains(r.stderr, "has ended); nothing was done. Now run the command again; `obversa status "+runDir+"` shows where the run stands") ||
			strings.Contains(r.stderr, "is locked by pid") || strings.Contains(r.stderr, "its worker") || strings.Contains(r.stderr, "that watchdog") {
			t.Errorf("%s of a run locked by no recorded live holder: exit %d, stderr %q; want exit %d saying no live process holds it, the last holder ended, and to run it again", args[0], r.code, r.stderr, exitUsage)
		}
	}
}
