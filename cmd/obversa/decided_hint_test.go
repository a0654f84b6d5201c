package main

import (
	"strings"
	"testing"
)

// TestDecidedApprovalPointsToResume: once an approval is recorded and the
// run was not carried on (approve --no-resume, or an approve killed right
// after recording it), the run is still paused at that position, but no
// person has to decide it any more: status and show name `obversa resume
// RUN`, not the approve that would be refused, and that refusal names the
// resume too.
func TestDecidedApprovalPointsToResume(t *testing.T) {
	t.Parallel()
	runFile, dir := gateRun(t)
	runDir := runDirOf(runFile, "gate")
	if r := obversa(t, dir, "approve", "--no-resume", runDir, "dag/c/1"); r.code != 0 {
		t.Fatalf("approve --no-resume: exit %d: %s", r.code, r.stderr)
	}
	resume := "obversa resume " + runDir
	approve := "obversa approve " + runDir
	for _, args := range [][]string{{"status", runDir}, {"show", runDir}} {
		r := obversa(t, dir, args...)
		if r.code != 0 || !strings.Contains(r.stdout, resume) || strings.Contains(r.stdout, approve) || !strings.Contains(r.stdout, "allow") {
			t.Errorf("%s of a run whose approval is recorded: exit %d, want %q, the decision and no %q:\n%s%s", args[0], r.code, resume, approve, r.stdout, r.stderr)
		}
	}
	r := obversa(t, dir, "approve", runDir, "dag/c/1")
	if r.code != exitUsage || !strings.Contains(r.stderr, "already decided") || !strings.Contains(r.stderr, resume) {
		t.Errorf("a second approve: exit %d, want 2, already decided and %q: %s", r.code, resume, r.stderr)
	}
	if r := obversa(t, dir, "resume", runDir); r.code != 0 {
		t.Errorf("resume: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
}
