package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/obversa/obversa/plugin"
	"github.com/obversa/obversa/sdk"
	"github.com/obversa/obversa/sdk/enginetest"
)

// preflightHelper makes the test binary a mock engine whose health turns
// bad once it has been configured, that is after the launch check every
// process makes and before the worker's preflight: "not-serving" answers
// NOT_SERVING, "health-hangs" never answers. Each launch appends its pid
// to $HELPER_PID_FILE.
func preflightHelper(mode string) int {
	if f := os.Getenv("HELPER_PID_FILE"); f != "" {
		fd, err := os.OpenFile(f, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err == nil {
			fmt.Fprintln(fd, os.Getpid())
			fd.Close()
		}
	}
	var configured atomic.Bool
	health := func(ctx context.Context) bool {
		if !configured.Load() {
			return true
		}
		if mode == "health-hangs" {
			select {}
		}
		return false
	}
	if err := sdk.ServeEngine(&configuredEngine{Engine: enginetest.New(), configured: &configured}, sdk.WithHealth(health)); err != nil {
		return 1
	}
	return 0
}

// configuredEngine is the mock engine noting that Configure was called.
type configuredEngine struct {
	*enginetest.Engine
	configured *atomic.Bool
}

func (e *configuredEngine) Configure(ctx context.Context, raw json.RawMessage) ([]plugin.Diagnostic, error) {
	d, err := e.Engine.Configure(ctx, raw)
	e.configured.Store(true)
	return d, err
}

// preflightRunFile is a one-node graph on lane "w" with a preflight
// policy. PLUGINS declares the engines, LANE the lane's targets and
// policy.
const preflightRunFile = `
teardown_grace = "1s"
restart {
  max_restarts    = 1
  initial_backoff = "10ms"
  max_backoff     = "10ms"
}
preflight {
  timeout = "TIMEOUT"
}
PLUGINS
lane "w" {
  LANE
}
graph "dag" {
  retry_cap_per_node = 0
  node "a" {
    lane   = "w"
    prompt = "hello"
  }
}
`

// mockPlugin declares the mock engine "mock" writing its calls to CALLS
// and reading READY, with CONFIG added to its config.
const mockPlugin = `
plugin "mock" {
  type   = "engine"
  path   = "BIN/mock-engine"
  config = { calls_log = "CALLS", ready_file = "READY" EXTRA }
}
`

const mockTarget = `{ adapter = "mock", provider = "local", model_family = "scripted", model = "m1", tools = [] }`

// pfRun is one preflight test run.
type pfRun struct {
	t                          *testing.T
	runFile, dir, calls, ready string
	runDir                     string
}

// newPFRun writes and pins a run file. repl are extra replacements
// applied to the whole text (EXTRA, LANE, PLUGINS…).
func newPFRun(t *testing.T, repl ...string) *pfRun {
	t.Helper()
	dir := t.TempDir()
	r := &pfRun{t: t, dir: dir, calls: filepath.Join(dir, "calls.log"), ready: filepath.Join(dir, "ready")}
	text := preflightRunFile
	defaults := map[string]string{"PLUGINS": mockPlugin, "LANE": "requested = " + mockTarget + "\n  preflight {\n    live = \"required\"\n  }", "TIMEOUT": "20s", "EXTRA": ""}
	for i := 0; i+1 < len(repl); i += 2 {
		defaults[repl[i]] = repl[i+1]
	}
	for _, k := range []string{"PLUGINS", "LANE", "TIMEOUT"} {
		text = strings.ReplaceAll(text, k, defaults[k])
	}
	text = strings.NewReplacer("EXTRA", defaults["EXTRA"], "CALLS", r.calls, "READY", r.ready, "BIN/", binDir+"/",
		"SELF", testBinary(t), "PIDFILE", filepath.Join(dir, "helper.pids")).Replace(text)
	r.runFile = filepath.Join(dir, "run.hcl")
	if err := os.WriteFile(r.runFile, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if res := obversa(t, dir, "plugin", "lock", r.runFile); res.code != 0 {
		t.Fatalf("lock: %s", res.stderr)
	}
	r.runDir = runDirOf(r.runFile, "pf")
	return r
}

// setReady writes the mock engine's ready file.
func (r *pfRun) setReady(ready bool) {
	r.t.Helper()
	content := "not ready"
	if ready {
		content = "ready"
	}
	if err := os.WriteFile(r.ready, []byte(content+"\n"), 0o644); err != nil {
		r.t.Fatal(err)
	}
}

// jsonResult runs the CLI with --json and decodes the result it prints.
func (r *pfRun) jsonResult(env []string, args ...string) (result, map[string]any) {
	r.t.Helper()
	res := obversaEnv(r.t, r.dir, env, args...)
	var out map[string]any
	if err := json.Unmarshal([]byte(strings.TrimSpace(res.stdout)), &out); err != nil {
		r.t.Fatalf("obversa %v printed %q (exit %d, stderr %q): %v", args, res.stdout, res.code, res.stderr, err)
	}
	return res, out
}

func (r *pfRun) run(env ...string) (result, map[string]any) {
	r.t.Helper()
	return r.jsonResult(env, "run", "--json", "--run-id", "pf", r.runFile)
}

func (r *pfRun) resume(id string) (result, map[string]any) {
	r.t.Helper()
	return r.jsonResult(nil, "resume", "--json", "--preflight", id, r.runDir)
}

// callsLog returns the mock engine's calls, one per line.
func (r *pfRun) callsLog() []string {
	r.t.Helper()
	b, err := os.ReadFile(r.calls)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		r.t.Fatal(err)
	}
	return strings.Fields(string(b))
}

// report returns `obversa preflight --json RUN`.
func (r *pfRun) report() map[string]any {
	r.t.Helper()
	res := obversa(r.t, r.dir, "preflight", "--json", r.runDir)
	var rep map[string]any
	if err := json.Unmarshal([]byte(res.stdout), &rep); err != nil {
		r.t.Fatalf("preflight --json: exit %d %q %q: %v", res.code, res.stdout, res.stderr, err)
	}
	return rep
}

// pauseID returns the preflight_event_id of a pause result.
func pauseID(t *testing.T, out map[string]any) string {
	t.Helper()
	o, _ := out["output"].(map[string]any)
	id, _ := o["preflight_event_id"].(string)
	if out["kind"] != "paused" || out["code"] != "PREFLIGHT_PAUSED" || id == "" {
		t.Fatalf("result %v, want a PREFLIGHT_PAUSED pause with its event id", out)
	}
	return id
}

// probeDetails returns "check outcome: detail" of every finished probe.
func probeDetails(t *testing.T, runDir string) []string {
	t.Helper()
	checks := map[string]string{}
	for _, s := range recorded(t, runDir, "preflight:probe-started") {
		checks[s["probe_id"].(string)] = s["check"].(string)
	}
	var out []string
	for _, f := range recorded(t, runDir, "preflight:probe-finished") {
		d, _ := f["detail"].(string)
		out = append(out, fmt.Sprintf("%s %s: %s", checks[f["probe_id"].(string)], f["outcome"], d))
	}
	return out
}
