package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/obversa/obversa/internal/failpoint"
)

// TestLoneAttemptFallbackAppendIsDurable: a one-node graph runs its lone
// attempt on the executor's loop (runOwn). Its lane's requested target
// fails auth, so the attempt records the failed call and the target's
// retirement as an intermediate append before it tries the fallback; the
// worker is killed once that append is durable (before the fallback is
// called). The next worker finds the retirement in the record: the dead
// target is never called again, the fallback answers, and the run
// completes with the retirement recorded once.
func TestLoneAttemptFallbackAppendIsDurable(t *testing.T) {
	t.Parallel()
	runFile, dir := rulesRun(t, "", "auth", `lane "w" {
  requested = { adapter = "dead", provider = "p1", model_family = "f", model = "m", tools = [] }
  fallbacks = [{ adapter = "mock", provider = "local", model_family = "scripted", model = "m1", tools = [] }]
}
restart {
  max_restarts    = 1
  initial_backoff = "50ms"
}
graph "dag" {
  node "a" {
    lane       = "w"
    prompt     = "hello"
    retry_safe = true
  }
}
`)
	flag := filepath.Join(dir, "fault.flag")
	r := obversaEnv(t, dir, []string{failpoint.Env + "=" + failpoint.AfterAppend + ":graph:engine-attempt-recorded:" + flag}, "run", "--run-id", "lone", runFile)
	if _, err := os.Stat(flag); err != nil {
		t.Fatalf("the worker was not killed after the intermediate append (%v): exit %d: %s", err, r.code, r.stderr)
	}
	if r.code != exitComplete {
		t.Fatalf("run: exit %d, want %d: %s", r.code, exitComplete, r.stderr)
	}
	runDir := runDirOf(runFile, "lone")
	if n := len(recorded(t, runDir, "run:worker-exited")); n != 1 {
		t.Fatalf("%d worker exits, want the one the failpoint caused", n)
	}
	if n := len(recorded(t, runDir, "graph:model-unavailable")); n != 1 {
		t.Errorf("%d model-unavailable events, want 1", n)
	}
	dead, completed := 0, 0
	for _, a := range recorded(t, runDir, "graph:engine-attempt-recorded") {
		if req, _ := a["requested"].(map[string]any); req["adapter"] == "dead" && a["outcome"] == "failed" {
			dead++
		}
		if a["outcome"] == "completed" {
			completed++
		}
	}
	if dead != 1 || completed != 1 {
		t.Errorf("calls: %d failed on the dead target, %d completed; want 1 and 1 (%v)", dead, completed, recorded(t, runDir, "graph:engine-attempt-recorded"))
	}
}
