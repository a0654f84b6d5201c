package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// forEachRunFile fans out over the 500 files a planning step lists: plan
// prints {"files": ["f1.go", …]}, lint runs once per file on the mock
// engine (its effects_file logs every execution with its position), join
// reads lint's results as a map by key. A mock engine process answers its
// first 250 lint calls in 20 ms and every later one in 2 s, so the run is
// still in the middle when the test, woken by the 250th call, kills the
// worker, however late a loaded machine lets it act (at 20 ms each the
// other 250 took under a second, and the whole run could end before the
// kill); the replacement's engine answers at 20 ms again.
const forEachRunFile = restartQuickly + `
limits {
  max_dispatches = 2000
}
plugin "mock" {
  type   = "engine"
  path   = "BIN/mock-engine"
  config = { effects_file = "EFFECTS", responses = [{ node = "lint", after_calls = 250, delay = "2s", text = "clean" }, { node = "lint", delay = "20ms", text = "clean" }] }
}
` + shellAndLane + `
graph "dag" {
  global_concurrency = 8
  node "plan" {
    binding    = "shell"
    input      = { command = ["sh", "-c", "printf '{\"files\":['; seq -f '\"f%g.go\"' -s , 1 500; printf ']}'"] }
    retry_safe = true
  }
  node "lint" {
    depends_on = ["plan"]
    for_each   = "${jsondecode(input.results.plan.stdout).files}"
    lane       = "w"
    prompt     = "Lint ${each.key}"
    retry_safe = true
  }
  node "join" {
    depends_on = ["lint"]
    binding    = "shell"
    input      = { command = ["echo", "${length(input.results.lint)} ${input.results.lint["f250.go"]}"] }
    retry_safe = true
  }
}
`

// TestForEach500CrashResume runs a dynamic for_each over 500 items from
// an upstream result, SIGKILLs the worker once about half of them have
// run, and checks that the replacement finishes the rest without running
// again any instance whose result was recorded before the kill, that each
// instance completed exactly once, and that join saw all 500 results.
func TestForEach500CrashResume(t *testing.T) {
	t.Parallel()
	runFile, dir, eff := writeEffectsRun(t, forEachRunFile)
	cmd := exec.Command(filepath.Join(binDir, "obversa"), "run", "--json", "--run-id", "c", runFile)
	cmd.Dir = dir
	var out strings.Builder
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for effects(t, eff) < 250 {
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatal("half the instances never ran")
		}
		time.Sleep(5 * time.Millisecond)
	}
	runDir := runDirOf(runFile, "c")
	if err := syscall.Kill(workerPID(t, runDir), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("run: %v: %s", err, out.String())
	}
	var res struct {
		Kind   string `json:"kind"`
		Output struct {
			Nodes struct {
				Join struct {
					Stdout string `json:"stdout"`
				} `json:"join"`
			} `json:"nodes"`
		} `json:"output"`
	}
	if err := json.Unmarshal([]byte(out.String()), &res); err != nil || res.Kind != "complete" {
		t.Fatalf("result %q: %v", out.String(), err)
	}
	if got := strings.TrimSpace(res.Output.Nodes.Join.Stdout); got != "500 clean" {
		t.Errorf("join saw %q, want 500 results", got)
	}
	// Completions before and after the kill, from the record.
	before, completed := map[string]bool{}, map[string]int{}
	crashed := false
	for _, line := range eventLines(t, runDir) {
		f := strings.Fields(line)
		switch {
		case f[0] == "run:worker-exited":
			crashed = true
		case f[0] == "graph:node-completed" && strings.HasPrefix(f[1], "dag/lint["):
			completed[f[1]]++
			if !crashed {
				before[f[1]] = true
			}
		}
	}
	if !crashed || len(before) == 0 || len(before) == 500 {
		t.Fatalf("the kill was not in the middle: crashed %v, %d instances completed before it", crashed, len(before))
	}
	if len(completed) != 500 {
		t.Errorf("%d instance positions completed, want 500", len(completed))
	}
	b, err := os.ReadFile(eff)
	if err != nil {
		t.Fatal(err)
	}
	runs, keys := map[string]int{}, map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		pos := strings.Fields(line)[1]
		runs[pos]++
		keys[pos[:strings.LastIndex(pos, "/")]]++
	}
	for pos, n := range completed {
		if n != 1 {
			t.Errorf("%s completed %d times", pos, n)
		}
	}
	for pos := range before {
		if runs[pos] != 1 || keys[pos[:strings.LastIndex(pos, "/")]] != 1 {
			t.Errorf("%s completed before the kill and ran %d times (its key %d times)", pos, runs[pos], keys[pos[:strings.LastIndex(pos, "/")]])
		}
	}
	t.Logf("%d of 500 instances completed before the kill; %d executions in all", len(before), len(strings.Split(strings.TrimSpace(string(b)), "\n")))
}
