package main

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/obversa/obversa/internal/testutil"
)

// TestFollowEndsWithTheRun: `events --follow`, `logs --follow` and
// `status --watch` keep following a paused run (it can be resumed), and
// exit 0 by themselves once the run has ended — after its result and the
// cleanup its watchdog records after it. On a run that already ended they
// print what is there and exit at once.
func TestFollowEndsWithTheRun(t *testing.T) {
	t.Parallel()
	dir, runDir := pausedAtGate(t, "fw")
	followers := [][]string{{"events", "--follow", runDir}, {"logs", "--follow", runDir}, {"status", "--watch", "--json", runDir}}
	type started struct {
		cmd *exec.Cmd
		out *testutil.SyncBuffer
	}
	var fs []started
	for _, args := range followers {
		cmd, out := startObversa(t, dir, nil, args...)
		fs = append(fs, started{cmd, out})
	}
	waited := make([]chan error, len(fs))
	for i, f := range fs {
		waited[i] = make(chan error, 1)
		go func() { waited[i] <- f.cmd.Wait() }()
	}
	// Paused is not ended: each follower is still there a while later.
	time.Sleep(1500 * time.Millisecond)
	for i, w := range waited {
		select {
		case err := <-w:
			t.Fatalf("%v exited (%v) while the run was paused:\n%s", followers[i], err, fs[i].out)
		default:
		}
	}
	if r := obversa(t, dir, "approve", runDir, "dag/gate/1"); r.code != 0 {
		t.Fatalf("approve: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	for i, w := range waited {
		select {
		case err := <-w:
			if err != nil {
				t.Errorf("%v: %v:\n%s", followers[i], err, fs[i].out)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("%v did not exit within 20 s of the run's end:\n%s", followers[i], fs[i].out)
		}
	}
	events := fs[0].out.String()
	fin, clean := strings.Index(events, "graph:run-finished"), strings.LastIndex(events, "run:cleanup")
	if fin < 0 || clean < fin {
		t.Errorf("events --follow did not print the result and the cleanup after it:\n%s", events)
	}
	lines := strings.Split(strings.TrimSpace(fs[2].out.String()), "\n")
	var last struct {
		Phase           string `json:"phase"`
		CleanupVerified *bool  `json:"cleanup_verified"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil || last.Phase != "completed" || last.CleanupVerified == nil {
		t.Errorf("status --watch ended on %q (%v), want completed with its cleanup recorded", lines[len(lines)-1], err)
	}
	if !strings.Contains(strings.Join(lines, "\n"), `"phase":"paused"`) {
		t.Errorf("status --watch never reported the pause:\n%s", fs[2].out)
	}
	// A run that has ended: everything at once, then exit.
	for _, args := range followers {
		cmd, out := startObversa(t, dir, nil, args...)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("%v on an ended run: %v:\n%s", args, err, out)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("%v on an ended run did not exit within 10 s:\n%s", args, out)
		}
	}
}

// TestFollowersEndWhenTheRunIsRemoved: `events --follow`, `logs --follow`
// and `status --watch` of a paused run whose directory is then removed
// stop within a few seconds with RUN_NOT_FOUND and a non-zero exit,
// instead of waiting on (or printing the last report of) a run that is
// gone.
func TestFollowersEndWhenTheRunIsRemoved(t *testing.T) {
	t.Parallel()
	dir, runDir := pausedAtGate(t, "gone")
	followers := [][]string{{"events", "--follow", runDir}, {"logs", "--follow", runDir}, {"status", "--watch", runDir}, {"status", "--watch", "--json", runDir}}
	type started struct {
		cmd  *exec.Cmd
		out  *testutil.SyncBuffer
		done chan error
	}
	var fs []started
	for _, args := range followers {
		cmd, out := startObversa(t, dir, nil, args...)
		f := started{cmd, out, make(chan error, 1)}
		go func() { f.done <- cmd.Wait() }()
		fs = append(fs, f)
	}
	// Each has read the run before it goes.
	deadline := time.Now().Add(10 * time.Second)
	for i, f := range fs {
		if followers[i][0] == "logs" {
			continue // the run's engine streamed nothing to print
		}
		for f.out.String() == "" && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if f.out.String() == "" {
			t.Fatalf("%v printed nothing in 10 s", followers[i])
		}
	}
	time.Sleep(500 * time.Millisecond) // logs --follow has opened the run too
	if err := os.RemoveAll(runDir); err != nil {
		t.Fatal(err)
	}
	for i, f := range fs {
		select {
		case err := <-f.done:
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() == 0 {
				t.Errorf("%v after the run was removed: %v, want a non-zero exit:\n%s", followers[i], err, f.out)
			}
			if !strings.Contains(f.out.String(), "RUN_NOT_FOUND") {
				t.Errorf("%v after the run was removed does not say RUN_NOT_FOUND:\n%s", followers[i], f.out)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%v still runs 10 s after the run was removed:\n%s", followers[i], f.out)
		}
	}
}

// pausedAtGate runs a one-node graph that pauses for approval, with run id
// id, and returns the directory it ran in and the run directory.
func pausedAtGate(t *testing.T, id string) (dir, runDir string) {
	t.Helper()
	runFile, dir := rulesRun(t, "", "", simpleLane+`
graph "dag" {
  approval = ["gate"]
  node "gate" {
    lane   = "w"
    prompt = "hello"
  }
}
`)
	if r := obversa(t, dir, "run", "--run-id", id, runFile); r.code != exitPaused {
		t.Fatalf("run: exit %d, want %d (paused for approval): %s", r.code, exitPaused, r.stderr)
	}
	return dir, runDirOf(runFile, id)
}

// TestRunRemovedWhileItRuns: a run whose directory is removed while it
// runs ends RUN_NOT_FOUND with exit 1, instead of reporting its result
// and naming a record that is gone.
func TestRunRemovedWhileItRuns(t *testing.T) {
	t.Parallel()
	runFile, dir := rulesRun(t, "", "", simpleLane+`
graph "dag" {
  node "wait" {
    binding    = "shell"
    input      = { command = ["sleep", "2"] }
    retry_safe = true
  }
}
`)
	runDir := runDirOf(runFile, "removed")
	cmd, out := startObversa(t, dir, nil, "run", "--run-id", "removed", runFile)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	waitAttempts(t, runDir, 1, "the node's attempt to start")
	if err := os.RemoveAll(runDir); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != exitFailed {
			t.Errorf("run after its directory was removed: %v, want exit %d:\n%s", err, exitFailed, out)
		}
		if !strings.Contains(out.String(), "RUN_NOT_FOUND") || strings.Contains(out.String(), "complete") {
			t.Errorf("run after its directory was removed does not say RUN_NOT_FOUND, or says complete:\n%s", out)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("run still runs 60 s after its directory was removed:\n%s", out)
	}
}
