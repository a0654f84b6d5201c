package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/obversa/obversa/host/watchdog"
)

// TestWorkerCPUTime runs a short chain with watchdog.CPUTimeEnv set: the
// worker writes the CPU time it and its one plugin used while the executor
// ran, and nothing else by that name.
func TestWorkerCPUTime(t *testing.T) {
	runFile := graphRunFile(t, 5, 1, func(i int) int { return i - 1 }, false)
	dir := filepath.Dir(runFile)
	if r := obversa(t, dir, "plugin", "lock", runFile); r.code != 0 {
		t.Fatalf("lock: %s", r.stderr)
	}
	path := filepath.Join(t.TempDir(), "cputime.json")
	if r := obversaEnv(t, dir, []string{watchdog.CPUTimeEnv + "=" + path}, "run", "--run-id", "c", runFile); r.code != 0 {
		t.Fatalf("run: %d %s", r.code, r.stderr)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the worker wrote no CPU time: %v", err)
	}
	var c watchdog.CPUTime
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	if c.WorkerNs <= 0 || len(c.PluginsNs) != 1 || c.PluginsNs["mock"] <= 0 {
		t.Fatalf("CPU time %s: want the worker's and the mock plugin's, both above 0", raw)
	}
}
