package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestStopOnErrorSaysWhyNodesDidNotRun: under stop_on_error, a node with
// no dependency that never ran because the run stopped on an error says
// STOPPED_ON_ERROR, not started, and a node whose dependency failed says
// BLOCKED a dependency failed — in run's result, show, show RUN NODE,
// status and status --json.
func TestStopOnErrorSaysWhyNodesDidNotRun(t *testing.T) {
	t.Parallel()
	runFile, dir := rulesRun(t, "", "", `
graph "dag" {
  stop_on_error      = true
  global_concurrency = 1
  retry_cap_per_node = 0
  node "a" {
    binding = "shell"
    input   = { command = ["sh", "-c", "exit 3"] }
  }
  node "b" {
    binding    = "shell"
    depends_on = ["a"]
    input      = { command = ["true"] }
  }
  node "c" {
    binding = "shell"
    input   = { command = ["true"] }
  }
}
`)
	const (
		stopped = "c: STOPPED_ON_ERROR not started: the run stopped on an error (stop_on_error)"
		blocked = "b: BLOCKED a dependency failed"
	)
	r := obversa(t, dir, "run", "--run-id", "s", runFile)
	if r.code != exitFailed || !strings.Contains(r.stdout, stopped) || !strings.Contains(r.stdout, blocked) {
		t.Fatalf("run: exit %d, want %d with %q and %q:\n%s%s", r.code, exitFailed, stopped, blocked, r.stdout, r.stderr)
	}
	runDir := runDirOf(runFile, "s")
	for _, args := range [][]string{{"show", runDir}, {"status", runDir}} {
		if r := obversa(t, dir, args...); r.code != 0 || !strings.Contains(r.stdout, stopped) || !strings.Contains(r.stdout, blocked) {
			t.Errorf("%s: exit %d, want %q and %q:\n%s%s", args[0], r.code, stopped, blocked, r.stdout, r.stderr)
		}
	}
	if r := obversa(t, dir, "show", runDir, "c"); !strings.Contains(r.stdout, "blocked:  STOPPED_ON_ERROR not started") {
		t.Errorf("show RUN c: exit %d, want why c is blocked:\n%s%s", r.code, r.stdout, r.stderr)
	}
	st := obversa(t, dir, "status", "--json", runDir)
	var rep struct {
		Result struct {
			Output struct {
				Errors map[string]struct{ Code, Message string } `json:"errors"`
			} `json:"output"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(st.stdout), &rep); err != nil {
		t.Fatalf("status --json: %v: %s", err, st.stdout)
	}
	if e := rep.Result.Output.Errors; e["c"].Code != "STOPPED_ON_ERROR" || e["b"].Code != "BLOCKED" {
		t.Errorf("status --json errors %+v; want c STOPPED_ON_ERROR, b BLOCKED", e)
	}
}
