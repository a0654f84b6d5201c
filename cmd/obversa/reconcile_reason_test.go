package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/obversa/obversa/host/graph"
	"github.com/obversa/obversa/host/runstate"
	"github.com/obversa/obversa/internal/failpoint"
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

// TestRecoveringWorkerKilledBeforeItsPause: a worker is SIGKILLed while a
// node that is not retry-safe runs; the next worker, recovering the
// attempt, is SIGKILLed just before it records the reconcile pause
// (failpoint before-append of graph:node-paused). The worker after it
// records the pause, and its reason says a crash cut the attempt off and
// the recovering worker ended before recording this pause, not that the
// worker running it was killed.
func TestRecoveringWorkerKilledBeforeItsPause(t *testing.T) {
	t.Parallel()
	runFile, dir, _ := watchdogCase{restart: `max_restarts = 2
  initial_backoff = "50ms"`, limits: `timeout = "5m"`, slow: "sleep 60", unsafe: true}.write(t)
	flag := filepath.Join(dir, "pause.flag")
	run, out := startRun(t, dir, runFile, "x", failpoint.Env+"="+failpoint.BeforeAppend+":"+graph.EventNodePaused+":"+flag)
	runDir := runDirOf(runFile, "x")
	waitAttempts(t, runDir, 2, "the slow node to start")
	if err := syscall.Kill(workerPID(t, runDir), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if code := exitCode(run.Wait()); code != exitPaused {
		t.Fatalf("the run exited %d, want %d (paused for reconciliation):\n%s", code, exitPaused, out)
	}
	if _, err := os.Stat(flag); err != nil {
		t.Fatalf("the recovering worker was not killed before its pause: %v", err)
	}
	if exits := recorded(t, runDir, runstate.EventWorkerExited); len(exits) != 2 {
		t.Fatalf("worker-exited %v, want two (the worker running the attempt, the one recovering it)", exits)
	}
	paused := recorded(t, runDir, "graph:node-paused")
	if len(paused) != 1 || paused[0]["position"] != "dag/slow/1" {
		t.Fatalf("node-paused %v, want dag/slow/1 once", paused)
	}
	reason, _ := paused[0]["request"].(map[string]any)["reason"].(string)
	const want = "a crash cut it off, and the worker recovering it was ended by a signal ("
	if !strings.HasPrefix(reason, want) || !strings.HasSuffix(reason, ") before it recorded this pause; its effect may have happened") {
		t.Fatalf("reconcile reason %q, want it to start %q and say the recovering worker ended before its pause", reason, want)
	}
}
