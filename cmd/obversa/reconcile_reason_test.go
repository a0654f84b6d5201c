package main

import (
	"strings"
	"testing"
)

// TestOperatorPauseNamedInReconcile: `obversa stop --pause` cuts off the
// attempt of a node that is not retry-safe; `obversa resume` asks whether
// it took effect, and the reason names the operator's pause that stopped
// its worker (the record holds no worker exit for it), not a worker whose
// end was never recorded.
func TestOperatorPauseNamedInReconcile(t *testing.T) {
	t.Parallel()
	runFile, dir, _ := watchdogCase{restart: `max_restarts = 0`, limits: `timeout = "5m"`, slow: "sleep 60", unsafe: true}.write(t)
	run, _ := startRun(t, dir, runFile, "x")
	runDir := runDirOf(runFile, "x")
	waitAttempts(t, runDir, 2, "the slow node to start")
	if r := obversa(t, dir, "stop", "--pause", runDir); r.code != 0 {
		t.Fatalf("stop --pause: exit %d: %s", r.code, r.stderr)
	}
	if code := exitCode(run.Wait()); code != exitPaused {
		t.Fatalf("the paused run exited %d, want %d", code, exitPaused)
	}
	w := recorded(t, runDir, "graph:run-waiting")
	if len(w) != 1 || w[0]["code"] != "OPERATOR_PAUSE" {
		t.Fatalf("run-waiting %v, want the operator's pause", w)
	}
	msg, _ := w[0]["output"].(map[string]any)["message"].(string)
	r := obversa(t, dir, "resume", runDir)
	paused := recorded(t, runDir, "graph:node-paused")
	if r.code != exitPaused || len(paused) != 1 || paused[0]["position"] != "dag/slow/1" {
		t.Fatalf("resume: exit %d, node-paused %v; want dag/slow/1 paused for reconciliation: %s %s", r.code, paused, r.stdout, r.stderr)
	}
	reason, _ := paused[0]["request"].(map[string]any)["reason"].(string)
	want := "the worker running it stopped (OPERATOR_PAUSE"
	if msg != "" {
		want += ": " + msg
	}
	if want += "); its effect may have happened"; reason != want || strings.Contains(reason, "not recorded") {
		t.Fatalf("reconcile reason %q, want %q", reason, want)
	}
}
