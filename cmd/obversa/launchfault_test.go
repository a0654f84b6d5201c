package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/obversa/obversa/sdk"
	"github.com/obversa/obversa/sdk/enginetest"
)

// launchFaultHelper makes the test binary a mock engine that starts well
// the first time it is launched (the run's pre-run check) and, from the
// second launch on (the worker's) while the file $HELPER_BROKEN exists,
// misbehaves: "not-serving-in-worker" answers NOT_SERVING to every health
// check, "dies-in-worker" writes a cause to stderr and exits 3 before its
// handshake. Each launch appends its pid to $HELPER_PID_FILE.
func launchFaultHelper(mode string) int {
	launches := 0
	if f := os.Getenv("HELPER_PID_FILE"); f != "" {
		if b, err := os.ReadFile(f); err == nil {
			launches = len(strings.Fields(string(b)))
		}
		if fd, err := os.OpenFile(f, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err == nil {
			fmt.Fprintln(fd, os.Getpid())
			fd.Close()
		}
	}
	_, err := os.Stat(os.Getenv("HELPER_BROKEN"))
	broken := launches > 0 && err == nil
	if broken && mode == "dies-in-worker" {
		fmt.Fprintln(os.Stderr, "mock: cannot open the model cache /var/cache/mock: permission denied")
		return 3
	}
	health := func() bool { return !broken }
	if err := sdk.ServeEngine(enginetest.New(), sdk.WithHealth(func(ctx context.Context) bool { return health() })); err != nil {
		return 1
	}
	return 0
}

// launchFaultRunFile is a one-node graph on lane "w" served by the helper
// engine; PREFLIGHT is replaced by a preflight block or nothing.
const launchFaultRunFile = `
teardown_grace = "1s"
restart {
  max_restarts    = 3
  initial_backoff = "10ms"
  max_backoff     = "10ms"
}
PREFLIGHT
plugin "mock" {
  type = "engine"
  path = "SELF"
  env  = { OBVERSA_TEST_HELPER = "MODE", HELPER_PID_FILE = "PIDFILE", HELPER_BROKEN = "@BROKEN@" }
}
lane "w" {
  requested = { adapter = "mock", provider = "local", model_family = "scripted", model = "m1", tools = [] }
}
graph "dag" {
  node "a" {
    lane   = "w"
    prompt = "hello"
  }
}
`

// TestPluginFailsOnlyInWorker: a plugin that passes the run's pre-run
// check and then does not start in the worker — it answers NOT_SERVING,
// or dies before its handshake — ends in a recorded, named pause with
// its cause in the result: PREFLIGHT_PAUSED when the run has a preflight
// policy, PLUGIN_START_FAILED otherwise. No worker crashes, no restart is
// used, and once the plugin is mended the run carries on to completion.
func TestPluginFailsOnlyInWorker(t *testing.T) {
	tests := []struct {
		mode, preflight, code, cause string
	}{
		{"not-serving-in-worker", `preflight {
  timeout = "20s"
}`, "PREFLIGHT_PAUSED", "NOT_SERVING"},
		{"dies-in-worker", `preflight {
  timeout = "20s"
}`, "PREFLIGHT_PAUSED", "cannot open the model cache /var/cache/mock: permission denied"},
		{"not-serving-in-worker", "", "PLUGIN_START_FAILED", "NOT_SERVING"},
		{"dies-in-worker", "", "PLUGIN_START_FAILED", "cannot open the model cache /var/cache/mock: permission denied"},
	}
	for _, tt := range tests {
		name := tt.mode
		if tt.preflight != "" {
			name += "-preflight"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			broken := filepath.Join(dir, "broken")
			if err := os.WriteFile(broken, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			text := strings.NewReplacer("PREFLIGHT", tt.preflight, "MODE", tt.mode, "PIDFILE", filepath.Join(dir, "pids"),
				"@BROKEN@", broken, "SELF", testBinary(t)).Replace(launchFaultRunFile)
			runFile := filepath.Join(dir, "run.hcl")
			if err := os.WriteFile(runFile, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			if r := obversa(t, dir, "plugin", "lock", runFile); r.code != 0 {
				t.Fatalf("lock: %s", r.stderr)
			}
			r, res := runJSON(t, runFile, "--run-id", "lf")
			out, _ := res["output"].(map[string]any)
			msg, _ := out["message"].(string)
			if r.code != exitPaused || res["kind"] != "paused" || res["code"] != tt.code || !strings.Contains(msg, tt.cause) {
				t.Fatalf("run: exit %d, result %v, want a %s pause quoting %q; stderr:\n%s", r.code, res, tt.code, tt.cause, r.stderr)
			}
			runDir := runDirOf(runFile, "lf")
			if n := len(recorded(t, runDir, "run:worker-exited")); n != 0 {
				t.Errorf("%d workers crashed, want none", n)
			}
			if n := len(recorded(t, runDir, "graph:node-dispatched")); n != 0 {
				t.Errorf("%d dispatches with a plugin that did not start", n)
			}
			if tt.code == "PLUGIN_START_FAILED" {
				if ps, _ := out["plugins"].([]any); len(ps) != 1 || ps[0] != "mock" {
					t.Errorf("plugins %v, want [mock]", out["plugins"])
				}
			}
			// Mended, the run carries on.
			if err := os.Remove(broken); err != nil {
				t.Fatal(err)
			}
			args := []string{"resume", "--json", runDir}
			if id, _ := out["preflight_event_id"].(string); id != "" {
				args = []string{"resume", "--json", "--preflight", id, runDir}
			}
			r = obversa(t, dir, args...)
			if r.code != 0 || !strings.Contains(r.stdout, `"kind":"complete"`) {
				t.Fatalf("resume: exit %d %s %s", r.code, r.stdout, r.stderr)
			}
		})
	}
}

// TestCheckedPluginLaunchedOnce: a plugin that passed the pre-run check
// with no diagnostics is launched only by the worker in later runs of the
// same storage directory; another env is checked again; and a plugin that
// breaks after its check was kept ends in a recorded PLUGIN_START_FAILED
// pause, not a refusal.
func TestCheckedPluginLaunchedOnce(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	broken := filepath.Join(dir, "broken")
	pids := filepath.Join(dir, "pids")
	text := strings.NewReplacer("PREFLIGHT", "", "MODE", "dies-in-worker", "PIDFILE", pids,
		"@BROKEN@", broken, "SELF", testBinary(t)).Replace(launchFaultRunFile)
	runFile := filepath.Join(dir, "run.hcl")
	write := func(text string) {
		t.Helper()
		if err := os.WriteFile(runFile, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	launches := func() int {
		t.Helper()
		b, err := os.ReadFile(pids)
		if err != nil {
			t.Fatal(err)
		}
		return len(strings.Fields(string(b)))
	}
	write(text)
	if r := obversa(t, dir, "plugin", "lock", runFile); r.code != 0 {
		t.Fatalf("lock: %s", r.stderr)
	}
	steps := []struct {
		id, text string
		broken   bool
		code     int
		launches int
	}{
		{id: "first", text: text, code: 0, launches: 2},
		{id: "warm", text: text, code: 0, launches: 1},
		{id: "other-env", text: strings.Replace(text, `HELPER_BROKEN = `, `OTHER = "1", HELPER_BROKEN = `, 1), code: 0, launches: 2},
		{id: "broke", text: text, broken: true, code: exitPaused, launches: 1},
	}
	for _, s := range steps {
		write(s.text)
		if s.broken {
			if err := os.WriteFile(broken, nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		before := 0
		if _, err := os.Stat(pids); err == nil {
			before = launches()
		}
		r, res := runJSON(t, runFile, "--run-id", s.id)
		if r.code != s.code {
			t.Fatalf("run %s: exit %d, want %d; result %v; stderr:\n%s", s.id, r.code, s.code, res, r.stderr)
		}
		if n := launches() - before; n != s.launches {
			t.Errorf("run %s launched the plugin %d times, want %d", s.id, n, s.launches)
		}
		if s.broken && res["code"] != "PLUGIN_START_FAILED" {
			t.Errorf("run %s: result %v, want a PLUGIN_START_FAILED pause", s.id, res)
		}
	}
}
