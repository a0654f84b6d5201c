package main

import (
	"strings"
	"testing"
)

// TestStoppedApprovalSkipped: a node waiting for approval when `obversa
// stop` ends the run is skipped and done in show and status, not paused
// and waiting for an approval that cannot come (docs/decisions.md,
// "Status after the end"); approving it is refused.
func TestStoppedApprovalSkipped(t *testing.T) {
	t.Parallel()
	runFile, dir := gateRun(t)
	runDir := runDirOf(runFile, "gate")
	if r := obversa(t, dir, "show", runDir); !strings.Contains(r.stdout, "waits for approval at dag/c/1") {
		t.Fatalf("show of the paused run does not say c waits for approval:\n%s%s", r.stdout, r.stderr)
	}
	if r := obversa(t, dir, "stop", "--yes", runDir); r.code != 0 {
		t.Fatalf("stop: exit %d: %s", r.code, r.stderr)
	}
	r := obversa(t, dir, "show", runDir)
	for _, want := range []string{"2/2 done (1 passed, 0 failed, 0 blocked, 1 skipped), 0 running, 0 paused", "c     skipped"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("show after stop has no %q:\n%s%s", want, r.stdout, r.stderr)
		}
	}
	if strings.Contains(r.stdout, "waits for approval") {
		t.Errorf("show after stop says c waits for approval:\n%s", r.stdout)
	}
	if r := obversa(t, dir, "runs"); !strings.Contains(r.stdout, " 2/2 ") {
		t.Errorf("runs after stop: want 2/2 nodes done:\n%s%s", r.stdout, r.stderr)
	}
	if r := obversa(t, dir, "show", runDir, "c"); !strings.Contains(r.stdout, "skipped") || strings.Contains(r.stdout, "paused:") {
		t.Errorf("show c after stop: want skipped, no pause:\n%s%s", r.stdout, r.stderr)
	}
	// The approval that cannot come is refused, and nothing follows the
	// run's result in the record.
	if r := obversa(t, dir, "approve", runDir, "dag/c/1"); r.code != exitUsage || !strings.Contains(r.stderr, "the run already ended (fail STOPPED)") {
		t.Errorf("approve after stop: exit %d, want %d naming how the run ended:\n%s%s", r.code, exitUsage, r.stdout, r.stderr)
	}
	// An ended run offers no other position in its place.
	if r := obversa(t, dir, "approve", runDir, "dag/a/1"); r.code != exitUsage || strings.Contains(r.stderr, "did you mean") {
		t.Errorf("approve of another position after stop: exit %d, want %d and no suggestion:\n%s%s", r.code, exitUsage, r.stdout, r.stderr)
	}
	if got := recorded(t, runDir, "graph:approval-decided"); len(got) != 0 {
		t.Errorf("approve after stop recorded a decision after the run's result: %v", got)
	}
}

// gateRun runs a graph of two shell nodes, "a" and "c" after it, whose
// "c" needs approval, as run "gate", until it pauses there; it returns
// the run file and the directory the run was made in.
func gateRun(t *testing.T) (runFile, dir string) {
	t.Helper()
	runFile, dir = rulesRun(t, "", "", `graph "dag" {
  approval = ["c"]
  node "a" {
    binding    = "shell"
    input      = { command = ["true"] }
    retry_safe = true
  }
  node "c" {
    binding    = "shell"
    depends_on = ["a"]
    input      = { command = ["true"] }
    retry_safe = true
  }
}
`)
	if r := obversa(t, dir, "run", "--run-id", "gate", runFile); r.code != exitPaused {
		t.Fatalf("run: exit %d: %s", r.code, r.stderr)
	}
	return runFile, dir
}
