package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/obversa/obversa/internal/failpoint"
)

// TestRunKilledWhileStartingIsInterrupted: `obversa run` is SIGKILLed once
// graph:run-started is durable, before any worker recorded its start.
// Nothing holds the run, so status calls it interrupted (not starting
// for ever) and advises resume; that advice, run by a shell as printed,
// carries the run to its end.
func TestRunKilledWhileStartingIsInterrupted(t *testing.T) {
	t.Parallel()
	storage := filepath.Join(t.TempDir(), "killed start $y")
	runFile := example(t, "quickstart", `directory = ".obversa"`, fmt.Sprintf("directory = %q", storage))
	dir := filepath.Dir(runFile)
	flag := filepath.Join(dir, "fault.flag")
	r := obversaEnv(t, dir, []string{failpoint.Env + "=" + failpoint.AfterAppend + ":graph:run-started:" + flag},
		"run", "--lock", "--run-id", "ks", runFile)
	if _, err := os.Stat(flag); err != nil || r.code != -1 {
		t.Fatalf("run was not killed after graph:run-started (%v): exit %d: %s", err, r.code, r.stderr)
	}
	runDir := filepath.Join(storage, "default", "runs", "ks")
	if n := len(recorded(t, runDir, "run:worker-started")); n != 0 {
		t.Fatalf("%d workers recorded their start, want none", n)
	}
	s := obversa(t, dir, "status", runDir)
	if s.code != 0 || !strings.Contains(s.stdout, "phase:    interrupted\n") {
		t.Fatalf("status: exit %d, want phase interrupted:\n%s%s", s.code, s.stdout, s.stderr)
	}
	resume, ok := strings.CutPrefix(hintLine(t, s.stdout, "next: "), "no watchdog holds this run; carry it on with ")
	if !ok {
		t.Fatalf("status advises %q, want a resume", hintLine(t, s.stdout, "next: "))
	}
	if res := shellRun(t, dir, resume); res.code != 0 || !strings.Contains(res.stdout, "complete: ") {
		t.Fatalf("sh -c %q: exit %d: %s%s", resume, res.code, res.stdout, res.stderr)
	}
}
