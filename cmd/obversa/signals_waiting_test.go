package main

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestInterruptNamesWaitingPositions: SIGTERM pauses a run while one of
// its positions waits for an approval; the recorded pause names the
// command that answers that position (a plain resume would refuse it),
// not "carry it on with obversa resume".
func TestInterruptNamesWaitingPositions(t *testing.T) {
	t.Parallel()
	runFile, dir := rulesRun(t, "", "", `graph "dag" {
  approval = ["c"]
  node "a" {
    binding = "shell"
    input   = { command = ["sleep", "60"] }
  }
  node "c" {
    binding    = "shell"
    input      = { command = ["true"] }
    retry_safe = true
  }
}
`)
	cmd, out := startRun(t, dir, runFile, "w")
	runDir := runDirOf(runFile, "w")
	waitAttempts(t, runDir, 1, "the first attempt")
	// The executor starts a's attempt before it records c's approval
	// wait (graph:node-paused): a SIGTERM in between pauses a run where
	// nothing waits for a person yet. Signal only once c waits.
	waitFor(t, 30*time.Second, "c to wait for its approval", func() bool {
		for _, p := range recorded(t, runDir, "graph:node-paused") {
			if p["position"] == "dag/c/1" {
				return true
			}
		}
		return false
	})
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if _ = cmd.Wait(); cmd.ProcessState.ExitCode() != exitPaused {
		t.Fatalf("SIGTERM: exit %d, want %d\n%s", cmd.ProcessState.ExitCode(), exitPaused, out.String())
	}
	waiting := recorded(t, runDir, "graph:run-waiting")
	if len(waiting) == 0 {
		t.Fatalf("no graph:run-waiting recorded\n%s", out.String())
	}
	msg := fmt.Sprint(waiting[len(waiting)-1])
	want := "obversa approve " + runDir + " dag/c/1"
	if !strings.Contains(msg, "OPERATOR_PAUSE") || !strings.Contains(msg, want) || strings.Contains(msg, "carry it on with obversa resume") {
		t.Errorf("the recorded pause does not name %q (or sends to a plain resume): %s", want, msg)
	}
}
