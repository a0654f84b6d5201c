package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRunWhoseDirectoryIsRemovedStops: the run's directory is removed
// while a node's command runs. The watchdog notices that its record is
// gone, stops the worker and every process of the run, and exits with an
// error saying so, instead of carrying the run on into files no path
// names.
func TestRunWhoseDirectoryIsRemovedStops(t *testing.T) {
	t.Parallel()
	runFile, dir := rulesRun(t, "", "", `graph "dag" {
  node "a" {
    binding = "shell"
    input   = { command = ["sh", "-c", "while [ ! -e gate ]; do sleep 0.05; done"] }
  }
}
`)
	gate := filepath.Join(dir, "gate")
	t.Cleanup(func() { _ = os.WriteFile(gate, nil, 0o644) })
	runDir := runDirOf(runFile, "gone")
	run, errb := startRun(t, dir, runFile, "gone")
	waitAttempts(t, runDir, 1, "the node's attempt")
	if len(marked(t, runDir)) == 0 {
		t.Fatal("no process of the run runs")
	}
	if err := os.RemoveAll(runDir); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- run.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(2 * time.Minute):
		t.Fatalf("the run went on after its directory was removed: %s", errb.String())
	}
	if code := exitCode(err); code != exitFailed || !strings.Contains(errb.String(), "record was removed or moved") {
		t.Errorf("run: exit %d, want %d with the removal named: %s", code, exitFailed, errb.String())
	}
	if left := marked(t, runDir); len(left) > 0 {
		t.Errorf("processes of the run outlived it: %v", left)
	}
}
