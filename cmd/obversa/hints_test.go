package main

import (
	"strings"
	"syscall"
	"testing"
)

// TestResumeHints walks a run whose attempt was cut off in flight from
// its pause (Ctrl-C) to its reconciliation, and checks that every refusal
// on the way points the right way: --reconciled before the plain resume
// that asks for it says to resume first; approve suggests no position
// that is not paused; a plain resume of a reconcile pause names resume
// --reconciled, not approve; --result with --reconciled=not-done is a
// usage error, and so is a --result the record cannot hold.
func TestResumeHints(t *testing.T) {
	t.Parallel()
	runFile, dir := rulesRun(t, "", "", "graph \"dag\" {\n  node \"a\" {\n    binding = \"shell\"\n    input = { command = [\"sleep\", \"60\"] }\n  }\n}\n")
	cmd, out := startRun(t, dir, runFile, "h")
	runDir := runDirOf(runFile, "h")
	waitAttempts(t, runDir, 1, "the first attempt")
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if _ = cmd.Wait(); cmd.ProcessState.ExitCode() != exitPaused {
		t.Fatalf("Ctrl-C: exit %d, want 3\n%s", cmd.ProcessState.ExitCode(), out.String())
	}

	r := obversa(t, dir, "resume", "--position", "dag/a/1", "--reconciled=not-done", runDir)
	if r.code != exitUsage || !strings.Contains(r.stderr, "RUN_NOT_PAUSED") || !strings.Contains(r.stderr, "plain `obversa resume RUN`") {
		t.Errorf("--reconciled before the plain resume: exit %d: %s", r.code, r.stderr)
	}
	r = obversa(t, dir, "approve", "--no-resume", runDir, "a")
	if r.code != exitUsage || strings.Contains(r.stderr, "did you mean") {
		t.Errorf("approve of a node with no paused position: exit %d, want 2 and no suggestion: %s", r.code, r.stderr)
	}

	if r = obversa(t, dir, "resume", runDir); r.code != exitPaused {
		t.Fatalf("plain resume: exit %d, want 3 (reconciliation): %s %s", r.code, r.stdout, r.stderr)
	}
	r = obversa(t, dir, "resume", runDir)
	want := "obversa resume " + runDir + " --position dag/a/1 --reconciled=done|not-done [--result JSON]"
	if r.code != exitUsage || !strings.Contains(r.stderr, want) || strings.Contains(r.stderr, "obversa approve") {
		t.Errorf("plain resume of a reconcile pause: exit %d, want 2 naming %q and not approve: %s", r.code, want, r.stderr)
	}
	r = obversa(t, dir, "resume", "--position", "dag/a/1", "--reconciled=not-done", "--result", `"x"`, runDir)
	if r.code != exitUsage || !strings.Contains(r.stderr, "--reconciled=done") {
		t.Errorf("--result with not-done: exit %d, want a usage error: %s", r.code, r.stderr)
	}
	for _, bad := range []string{"1e400", "12345678901234567890123", `"\ud800"`} {
		r = obversa(t, dir, "resume", "--position", "dag/a/1", "--reconciled=done", "--result", bad, runDir)
		if r.code != exitUsage || !strings.Contains(r.stderr, "--result cannot be recorded") {
			t.Errorf("--result %s, which the record cannot hold: exit %d, want a usage error naming --result: %s", bad, r.code, r.stderr)
		}
	}
	if r = obversa(t, dir, "resume", "--position", "a", runDir); !strings.Contains(r.stderr, `did you mean "dag/a/1"`) {
		t.Errorf("resume --position a: want the paused dag/a/1 suggested: %s", r.stderr)
	}
	if n := len(recorded(t, runDir, "graph:node-completed")); n != 0 {
		t.Errorf("%d completions recorded by refused commands", n)
	}
}
