package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/obversa/obversa/host/watchdog"
)

// TestWorkerCPUTime runs a chain with watchdog.CPUTimeEnv set: the
// worker writes the CPU time it and its one plugin used while the executor
// ran, the bytes it allocated and the times its threads waited
// meanwhile, and nothing else by that name. It collected no garbage meanwhile (a run that allocates less than
// workerFirstHeap never collects), and with GOGC=1 given to `obversa run`
// it collects (the operator's setting reaches the worker and wins). The
// chain is long enough (60 nodes, about 700 KB allocated) that GOGC=1
// must collect: its heap goal is the live heap and 1 % of it and of the
// stacks and globals, which a 5-node chain's 100–170 KB did not always
// reach. The shared socket directory holds socketLeftovers entries
// meanwhile, as on a machine where killed processes left many: listing
// them allocates about 1 MB, which a worker sweeping beside its
// executor collected (docs/decisions.md, "Plugin socket directories").
func TestWorkerCPUTime(t *testing.T) {
	plantSocketLeftovers(t)
	runFile := graphRunFile(t, 60, 1, func(i int) int { return i - 1 }, false)
	dir := filepath.Dir(runFile)
	if r := obversa(t, dir, "plugin", "lock", runFile); r.code != 0 {
		t.Fatalf("lock: %s", r.stderr)
	}
	for _, gogc := range []string{"", "1"} {
		c, raw := workerCPUTime(t, dir, runFile, "c"+gogc, gogc)
		if c.WorkerGCs != 0 && gogc == "" {
			t.Errorf("the worker collected garbage %d times in a 60-node chain: %s", c.WorkerGCs, raw)
		}
		if c.WorkerGCs == 0 && gogc != "" {
			t.Errorf("with GOGC=%s the worker collected no garbage: %s", gogc, raw)
		}
	}
}

// socketLeftovers is how many entries plantSocketLeftovers makes.
const socketLeftovers = 6000

// plantSocketLeftovers makes socketLeftovers empty files in this user's
// shared plugin socket directory, /tmp/obversa-<uid>, under names no sweep
// removes, and removes them when t ends.
func plantSocketLeftovers(t *testing.T) {
	t.Helper()
	base := filepath.Join("/tmp", "obversa-"+strconv.Itoa(os.Getuid()))
	if err := os.Mkdir(base, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		t.Fatal(err)
	}
	prefix := fmt.Sprintf("leftover-%d-", os.Getpid())
	t.Cleanup(func() {
		for i := range socketLeftovers {
			_ = os.Remove(filepath.Join(base, prefix+strconv.Itoa(i)))
		}
	})
	for i := range socketLeftovers {
		if err := os.WriteFile(filepath.Join(base, prefix+strconv.Itoa(i)), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// workerCPUTime runs runFile as run id with watchdog.CPUTimeEnv set (and
// GOGC when gogc is not empty) and returns what the worker wrote.
func workerCPUTime(t *testing.T, dir, runFile, id, gogc string) (watchdog.CPUTime, []byte) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "cputime.json")
	env := []string{watchdog.CPUTimeEnv + "=" + path}
	if gogc != "" {
		env = append(env, "GOGC="+gogc)
	}
	if r := obversaEnv(t, dir, env, "run", "--run-id", id, runFile); r.code != 0 {
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
	if c.WorkerAllocBytes <= 0 {
		t.Fatalf("CPU time %s: want the bytes the worker allocated, above 0", raw)
	}
	if c.WorkerSleeps <= 0 {
		t.Fatalf("CPU time %s: want the times the worker's threads waited, above 0", raw)
	}
	return c, raw
}
