package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/obversa/obversa/internal/cgroup"
	"github.com/obversa/obversa/internal/testutil"
	"github.com/obversa/obversa/plugin/confine"
)

// confineRun is a graph whose nodes try what confinement forbids. PORT is
// a loopback listener, OUTSIDE a directory outside the workspace that
// holds secret/key, which the shell plugin may not read.
const confineRun = `
workspace {
  root     = "."
  provider = "none"
}
graph "dag" {
  stop_on_error      = false
  retry_cap_per_node = 0
  node "inside" {
    binding = "shell"
    input   = { command = ["sh", "-c", "echo ok > made-by-node.txt && mkdir -p out && echo ok > out/x"] }
  }
  node "outside" {
    binding = "shell"
    input   = { command = ["sh", "-c", "echo x > OUTSIDE/escaped.txt"] }
  }
  node "read_denied" {
    binding = "shell"
    input   = { command = ["cat", "OUTSIDE/secret/key"] }
  }
  node "read_allowed" {
    binding = "shell"
    input   = { command = ["cat", "OUTSIDE/public"] }
  }
  node "record" {
    binding = "shell"
    input   = { command = ["sh", "-c", "echo x > .obversa/default/runs/forged"] }
  }
  node "connect" {
    binding = "shell"
    input   = { command = ["bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/PORT"] }
  }
  node "connect_allowed" {
    binding = "net"
    input   = { command = ["bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/PORT"] }
  }
  # An OOM kill leaves a node that is not retry_safe paused for
  # reconciliation (TestConfinementOOMUncertain); this one has no effect
  # to repeat, so it fails OUT_OF_MEMORY.
  node "oom" {
    binding    = "small"
    retry_safe = true
    input      = { command = ["sh", "-c", "head -c 300000000 /dev/zero | tail -n 1 > /dev/null"] }
  }
}
plugin "shell" {
  type = "node"
  path = "BIN/cmd-engine"
  confine {
    write     = [".obversa/default/runs", ".obversa"]
    deny_read = ["OUTSIDE/secret"]
  }
}
plugin "net" {
  type = "node"
  path = "BIN/cmd-engine"
  confine {
    network = true
  }
}
plugin "small" {
  type = "node"
  path = "BIN/cmd-engine"
  confine {
    memory = "48MiB"
  }
}
`

// TestConfinement runs node commands under the default confinement: a
// write outside the workspace fails with the command's own EACCES, so does
// a read of a deny_read path, the record stays unwritable though write
// lists it, a loopback connect is refused unless network = true, and a
// command allocating past memory fails OUT_OF_MEMORY naming the limit.
// What this kernel cannot enforce is skipped with the reason, by feature:
// Landlock (files), Landlock ABI 4 (TCP) and a memory controller.
func TestConfinement(t *testing.T) {
	sup := confine.Detect()
	if sup.LandlockABI == 0 {
		t.Skipf("confinement cannot be tested here: this kernel offers %s", sup)
	}
	port := testutil.Loopback(t)
	outside := t.TempDir()
	if err := os.Mkdir(filepath.Join(outside, "secret"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"secret/key", "public"} {
		if err := os.WriteFile(filepath.Join(outside, f), []byte(f+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	text := strings.NewReplacer("PORT", strconv.Itoa(port), "OUTSIDE", outside).Replace(confineRun)
	runFile := writeRunFile(t, text)
	dir := filepath.Dir(runFile)
	r, res := runJSON(t, runFile, "--run-id", "c1")
	if r.code != 1 || res["kind"] != "fail" {
		t.Fatalf("exit %d, result %v, stderr:\n%s", r.code, res, r.stderr)
	}
	outcome, kernel := nodeOutcomes(t, dir, runDirOf(runFile, "c1"))
	t.Logf("kernel: %s; nodes: %q", kernel, outcome)
	if !strings.HasPrefix(kernel, "Landlock ABI") {
		t.Errorf("show --json: confinement kernel %q, want Landlock ABI …", kernel)
	}
	st := obversa(t, dir, "status", runDirOf(runFile, "c1"))

	t.Run("files", func(t *testing.T) {
		denied := "Permission denied"
		if sup.MountNS {
			denied = "Read-only file system"
		}
		wantOutcomes(t, outcome, map[string][]string{
			"inside":       {"passed"},
			"outside":      {"Permission denied"},
			"read_denied":  {"Permission denied"},
			"read_allowed": {"passed"},
			"record":       {denied},
		})
		if _, err := os.Stat(filepath.Join(dir, "out", "x")); err != nil {
			t.Errorf("a node could not write in the workspace: %v", err)
		}
		if _, err := os.Stat(filepath.Join(outside, "escaped.txt")); err == nil {
			t.Error("a node wrote outside the workspace")
		}
		if _, err := os.Stat(filepath.Join(dir, ".obversa", "default", "runs", "forged")); err == nil {
			t.Error("a node wrote into the storage directory")
		}
	})
	t.Run("network", func(t *testing.T) {
		if sup.LandlockABI < confine.MinNetworkABI {
			t.Skipf("Landlock ABI %d has no TCP rules (ABI %d has)", sup.LandlockABI, confine.MinNetworkABI)
		}
		wantOutcomes(t, outcome, map[string][]string{
			"connect":         {"Permission denied"},
			"connect_allowed": {"passed"},
		})
		if !strings.Contains(st.stdout, "network:   denied (TCP connect and bind)") {
			t.Errorf("status does not print the network rule:\n%s", st.stdout)
		}
	})
	t.Run("memory", func(t *testing.T) {
		if sup.Cgroup.Memory == cgroup.MemoryNone {
			t.Skipf("no memory controller: %s", sup.Cgroup.Reason)
		}
		wantOutcomes(t, outcome, map[string][]string{
			"oom": {"OUT_OF_MEMORY", "48 MiB", "confine.memory"},
		})
		if !strings.Contains(st.stdout, "memory:    48 MiB") {
			t.Errorf("status does not print the memory limit:\n%s", st.stdout)
		}
	})
}

// nodeOutcomes reads `show --json` of a run: each node's failure ("CODE:
// message") or, when it has none, its status; and the confinement's
// kernel line.
func nodeOutcomes(t *testing.T, dir, runDir string) (map[string]string, string) {
	t.Helper()
	sh := obversa(t, dir, "show", "--json", runDir)
	var shown struct {
		Nodes []struct {
			ID      string `json:"id"`
			Status  string `json:"status"`
			Failure *struct {
				Code    string `json:"code"`
				Message string `json:"message"`
			} `json:"failure"`
		} `json:"nodes"`
		Confinement *struct {
			Kernel string `json:"kernel"`
		} `json:"confinement"`
	}
	if err := json.Unmarshal([]byte(sh.stdout), &shown); err != nil {
		t.Fatalf("show --json: %v: %s", err, sh.stdout)
	}
	out := map[string]string{}
	for _, n := range shown.Nodes {
		if n.Failure != nil {
			out[n.ID] = n.Failure.Code + ": " + n.Failure.Message
		} else {
			out[n.ID] = n.Status
		}
	}
	kernel := ""
	if shown.Confinement != nil {
		kernel = shown.Confinement.Kernel
	}
	return out, kernel
}

// wantOutcomes checks that each node's outcome holds every wanted text.
func wantOutcomes(t *testing.T, outcome map[string]string, want map[string][]string) {
	t.Helper()
	for node, texts := range want {
		for _, w := range texts {
			if !strings.Contains(outcome[node], w) {
				t.Errorf("node %s: %q, want %q in it", node, outcome[node], w)
			}
		}
	}
}

// TestConfinementRequired pretends the kernel lacks Landlock (a test
// build's OBVERSA_FAKE_KERNEL): a run file requiring confinement is
// refused before it starts, one that does not runs and says so.
func TestConfinementRequired(t *testing.T) {
	required := `
workspace {
  root     = "."
  provider = "none"
}
plugin "shell" {
  type = "node"
  path = "BIN/cmd-engine"
  confine {
    required = REQUIRED
  }
}
graph "dag" {
  node "n" {
    binding = "shell"
    input   = { command = ["true"] }
  }
}
`
	env := []string{confine.FakeKernelEnv + "=nolandlock"}
	runFile := writeRunFile(t, strings.ReplaceAll(required, "REQUIRED", "true"))
	dir := filepath.Dir(runFile)
	if r := obversa(t, dir, "plugin", "lock", runFile); r.code != 0 {
		t.Fatalf("plugin lock: %s", r.stderr)
	}
	r := obversaEnv(t, dir, env, "run", "--run-id", "req", runFile)
	if r.code != exitUsage || !strings.Contains(r.stderr, "CONFINEMENT_UNAVAILABLE") || !strings.Contains(r.stderr, "kernel lacks Landlock") {
		t.Errorf("required on a kernel without Landlock: exit %d: %s", r.code, r.stderr)
	}
	if _, err := os.Stat(runDirOf(runFile, "req")); err == nil {
		t.Error("a refused run left a run directory")
	}
	runFile = writeRunFile(t, strings.ReplaceAll(required, "REQUIRED", "false"))
	dir = filepath.Dir(runFile)
	if r := obversa(t, dir, "plugin", "lock", runFile); r.code != 0 {
		t.Fatalf("plugin lock: %s", r.stderr)
	}
	if r := obversaEnv(t, dir, env, "run", "--run-id", "opt", runFile); r.code != 0 {
		t.Fatalf("not required on a kernel without Landlock: exit %d: %s", r.code, r.stderr)
	}
	st := obversaEnv(t, dir, env, "status", runDirOf(runFile, "opt"))
	if !strings.Contains(st.stdout, "confinement: none (kernel lacks Landlock)") {
		t.Errorf("status on a kernel without Landlock:\n%s", st.stdout)
	}
}

// oomRun is a node that is not retry_safe whose command allocates past its
// plugin's memory limit while the plugin (cmd-engine) lives on to report
// the failure; with a retry left, a failure would be retried.
const oomRun = `
workspace {
  root     = "."
  provider = "none"
}
graph "dag" {
  retry_cap_per_node = 1
  node "oom" {
    binding = "small"
    input   = { command = ["sh", "-c", "echo x >> effects.txt; head -c 300000000 /dev/zero | tail -n 1 > /dev/null"] }
  }
}
plugin "small" {
  type = "node"
  path = "BIN/cmd-engine"
  confine {
    memory = "48MiB"
  }
}
`

// TestConfinementOOMUncertain: a command the OOM killer ended under a
// real memory cgroup was cut off mid-way, so a node that is not retry_safe
// is paused with reconcile-attempt naming the OOM killer, never retried
// silently, whether the kernel picked the command (the plugin survives to
// report it) or the plugin itself (docs/decisions.md, "An attempt the host
// cut off is uncertain"). TestConfinement covers the retry-safe node,
// which fails OUT_OF_MEMORY.
func TestConfinementOOMUncertain(t *testing.T) {
	r, runDir, st, ran := runOOM(t, oomRun)
	if r.code != exitPaused || len(st.PauseReasons) != 1 || st.PauseReasons[0].Kind != "reconcile-attempt" ||
		!strings.Contains(st.PauseReasons[0].Reason, "OOM killer") || st.PauseReasons[0].Position != "dag/oom/1" {
		t.Fatalf("exit %d, pause reasons %+v; want dag/oom/1 paused for reconciliation naming the OOM killer\nstderr:\n%s\nevents:\n%s",
			r.code, st.PauseReasons, r.stderr, strings.Join(eventLines(t, runDir), "\n"))
	}
	if ran != 1 {
		t.Errorf("the command ran %d times, want once (never retried silently)", ran)
	}
}

// runOOM runs src as run "m" under a real memory cgroup, skipping the test
// where there is no memory controller; it returns the result, the run
// directory, its status, and how many times a command wrote its "x" to
// effects.txt.
func runOOM(t *testing.T, src string) (r result, runDir string, st statusReport, ran int) {
	t.Helper()
	if sup := confine.Detect(); sup.Cgroup.Memory == cgroup.MemoryNone {
		t.Skipf("no memory controller: %s", sup.Cgroup.Reason)
	}
	runFile := writeRunFile(t, src)
	r, _ = runJSON(t, runFile, "--run-id", "m")
	runDir = runDirOf(runFile, "m")
	st = status(t, runDir)
	eff, _ := os.ReadFile(filepath.Join(filepath.Dir(runFile), "effects.txt"))
	return r, runDir, st, strings.Count(string(eff), "x")
}

// oomOverlapRun has two nodes on one memory-limited plugin, neither
// retry_safe: x's command has a child the OOM killer ends, and its shell
// lives on and fails later; y fails by itself while x's shell still runs.
const oomOverlapRun = `
workspace {
  root     = "."
  provider = "none"
}
graph "dag" {
  global_concurrency = 2
  retry_cap_per_node = 1
  node "x" {
    binding = "small"
    input   = { command = ["sh", "-c", "echo x >> effects.txt; head -c 300000000 /dev/zero | tail -n 1 > /dev/null; sleep 3; exit 1"] }
  }
  node "y" {
    binding = "small"
    input   = { command = ["sh", "-c", "sleep 1.5; exit 1"] }
  }
}
plugin "small" {
  type = "node"
  path = "BIN/cmd-engine"
  confine {
    memory = "48MiB"
  }
}
`

// TestConfinementOOMOverlapping: an OOM kill in a plugin's memory group is
// told to every call in flight when it happened, not only to the first
// call that fails afterwards: here y fails first, and x — whose command
// the kernel cut off — must still be paused for reconciliation at its
// first position, never retried (its effect ran once).
func TestConfinementOOMOverlapping(t *testing.T) {
	r, runDir, st, ran := runOOM(t, oomOverlapRun)
	paused := false
	for _, p := range st.PauseReasons {
		if p.Position == "dag/x/1" && p.Kind == "reconcile-attempt" && strings.Contains(p.Reason, "OOM killer") {
			paused = true
		}
	}
	if r.code != exitPaused || !paused {
		t.Fatalf("exit %d, pause reasons %+v; want dag/x/1 paused for reconciliation naming the OOM killer\nstderr:\n%s\nevents:\n%s",
			r.code, st.PauseReasons, r.stderr, strings.Join(eventLines(t, runDir), "\n"))
	}
	if ran != 1 {
		t.Errorf("x's command ran %d times, want once (never retried silently)", ran)
	}
}
