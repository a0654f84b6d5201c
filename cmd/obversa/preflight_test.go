package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/obversa/obversa/internal/failpoint"
	"github.com/obversa/obversa/plugin"
	"github.com/obversa/obversa/sdk"
	"github.com/obversa/obversa/sdk/enginetest"
	"github.com/obversa/obversa/store"
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

// TestPreflightUnhealthyPlugin: a plugin that answers NOT_SERVING, or
// never answers, pauses the run before dispatch; the one that never
// answers is stopped.
func TestPreflightUnhealthyPlugin(t *testing.T) {
	helper := `
plugin "mock" {
  type   = "engine"
  path   = "SELF"
  env    = { OBVERSA_TEST_HELPER = "MODE", HELPER_PID_FILE = "PIDFILE" }
}
`
	tests := []struct {
		mode, timeout, detail string
	}{
		{mode: "not-serving", timeout: "20s", detail: "NOT_SERVING"},
		{mode: "health-hangs", timeout: "1s", detail: "did not answer its health check within 1s; the plugin process was stopped"},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			t.Parallel()
			r := newPFRun(t, "PLUGINS", strings.ReplaceAll(helper, "MODE", tt.mode), "TIMEOUT", tt.timeout)
			res, out := r.run()
			if res.code != exitPaused {
				t.Fatalf("run: exit %d, want %d: %s", res.code, exitPaused, res.stderr)
			}
			id := pauseID(t, out)
			if n := len(recorded(t, r.runDir, "graph:node-dispatched")); n != 0 {
				t.Errorf("%d dispatches before preflight admitted the run", n)
			}
			details := probeDetails(t, r.runDir)
			if len(details) != 2 || !strings.HasPrefix(details[0], "digest passed") || !strings.HasPrefix(details[1], "health failed") || !strings.Contains(details[1], tt.detail) {
				t.Errorf("probes %q, want digest passed then health failed with %q", details, tt.detail)
			}
			rep := r.report()
			if rep["phase"] != "paused" || rep["pause_event_id"] != id {
				t.Errorf("preflight report %v", rep)
			}
			b, err := os.ReadFile(filepath.Join(r.dir, "helper.pids"))
			if err != nil {
				t.Fatal(err)
			}
			pids := strings.Fields(string(b))
			if len(pids) != 2 {
				t.Fatalf("helper launched %d times (%v), want twice: the run's check and the worker", len(pids), pids)
			}
			pid, _ := strconv.Atoi(pids[1])
			if err := syscall.Kill(pid, 0); err == nil {
				t.Errorf("the worker's plugin (pid %d) still runs after the pause", pid)
			}
		})
	}
}

// TestPreflightLaneDead: an auth failure of the static check retires the
// target (graph:model-unavailable); with no other target the run fails
// PREFLIGHT_FAILED, with a fallback the fallback is admitted and runs the
// node. unsupported_static decides an engine that cannot admit statically.
func TestPreflightLaneDead(t *testing.T) {
	dead := mockPlugin + `
plugin "dead" {
  type   = "engine"
  path   = "BIN/mock-engine"
  config = { admit_failure = { kind = "auth", message = "bad key" } }
}
`
	deadTarget := `{ adapter = "dead", provider = "p1", model_family = "f", model = "m", tools = [] }`
	tests := []struct {
		name, plugins, lane, extra string
		code                       string // "" for complete
		retired                    int
		calls                      []string
	}{
		{name: "auth on the only target", plugins: dead,
			lane: "requested = " + deadTarget + "\n  preflight {\n    live = \"required\"\n  }",
			code: "PREFLIGHT_FAILED", retired: 1},
		{name: "auth with a fallback", plugins: dead,
			lane:    "requested = " + deadTarget + "\n  fallbacks = [" + mockTarget + "]\n  preflight {\n    live = \"required\"\n  }",
			retired: 1, calls: []string{"static", "live:ready", "ordinary"}},
		{name: "unsupported and block", plugins: mockPlugin, extra: ", admit = false",
			lane: "requested = " + mockTarget + "\n  preflight {\n    unsupported_static = \"block\"\n  }",
			code: "PREFLIGHT_FAILED", calls: []string{"static"}},
		{name: "unsupported and allow", plugins: mockPlugin, extra: ", admit = false",
			lane:  "requested = " + mockTarget + "\n  preflight {\n    live = \"required\"\n    unsupported_static = \"allow\"\n  }",
			calls: []string{"static", "live:ready", "ordinary"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := newPFRun(t, "PLUGINS", tt.plugins, "LANE", tt.lane, "EXTRA", tt.extra)
			r.setReady(true)
			res, out := r.run()
			switch {
			case tt.code == "" && (res.code != 0 || out["kind"] != "complete"):
				t.Fatalf("run: exit %d %v, want complete: %s", res.code, out, res.stderr)
			case tt.code != "" && (res.code != exitFailed || out["code"] != tt.code):
				t.Fatalf("run: exit %d %v, want %s: %s", res.code, out, tt.code, res.stderr)
			}
			mu := recorded(t, r.runDir, "graph:model-unavailable")
			if len(mu) != tt.retired {
				t.Errorf("%d model-unavailable events, want %d: %v", len(mu), tt.retired, mu)
			}
			for _, m := range mu {
				if m["failure_kind"] != "auth" || m["node"] != nil {
					t.Errorf("model-unavailable %v, want an auth retirement outside any node", m)
				}
			}
			if diff := cmp.Diff(tt.calls, r.callsLog()); diff != "" {
				t.Errorf("mock calls (-want +got):\n%s", diff)
			}
			rep := r.report()
			if tt.code != "" {
				if rep["phase"] != "failed" || len(recorded(t, r.runDir, "graph:node-dispatched")) != 0 {
					t.Errorf("report %v; a failed preflight must dispatch nothing", rep)
				}
				// Terminal: resume changes nothing.
				if res := obversa(t, r.dir, "resume", r.runDir); res.code != exitFailed || !strings.Contains(res.stderr, "nothing was changed") {
					t.Errorf("resume of a PREFLIGHT_FAILED run: exit %d %s", res.code, res.stderr)
				}
				return
			}
			admitted, _ := rep["admitted"].(map[string]any)
			w, _ := admitted["w"].(map[string]any)
			target, _ := w["target"].(map[string]any)
			if rep["phase"] != "admitted" || target["adapter"] != "mock" {
				t.Errorf("report %v, want lane w admitted on mock", rep)
			}
		})
	}
}

// TestPreflightStaleResumeID: each pause has its own event id; resuming
// with an older one, or with none, is RESUME_EVENT_MISMATCH naming both
// ids and changes nothing.
func TestPreflightStaleResumeID(t *testing.T) {
	r := newPFRun(t)
	res, out := r.run()
	if res.code != exitPaused {
		t.Fatalf("run: exit %d: %s", res.code, res.stderr)
	}
	first := pauseID(t, out)
	res, out = r.resume(first)
	if res.code != exitPaused {
		t.Fatalf("resume %s: exit %d: %s", first, res.code, res.stderr)
	}
	second := pauseID(t, out)
	if second == first {
		t.Fatalf("the second pause reuses the id %s", first)
	}
	before := eventLines(t, r.runDir)
	for _, args := range [][]string{{"--preflight", first}, {}} {
		res := obversa(t, r.dir, append(append([]string{"resume"}, args...), r.runDir)...)
		if res.code != exitUsage || !strings.Contains(res.stderr, "RESUME_EVENT_MISMATCH") || !strings.Contains(res.stderr, second) ||
			(len(args) > 0 && !strings.Contains(res.stderr, first)) {
			t.Errorf("resume %v: exit %d, stderr %q; want RESUME_EVENT_MISMATCH naming %s and %s", args, res.code, res.stderr, first, second)
		}
	}
	if after := eventLines(t, r.runDir); !slices.Equal(before, after) {
		t.Errorf("a refused resume appended events")
	}
	r.setReady(true)
	if res, out := r.resume(second); res.code != 0 || out["kind"] != "complete" {
		t.Fatalf("resume %s: exit %d %v: %s", second, res.code, out, res.stderr)
	}
	want := []string{"static", "live:not-ready", "static", "live:not-ready", "static", "live:ready", "ordinary"}
	if diff := cmp.Diff(want, r.callsLog()); diff != "" {
		t.Errorf("mock calls (-want +got):\n%s", diff)
	}
	// A run that ended has no open preflight pause: naming one is the
	// mismatch error, and nothing is appended.
	ended := eventLines(t, r.runDir)
	res = obversa(t, r.dir, "resume", "--preflight", second, r.runDir)
	if res.code != exitUsage || !strings.Contains(res.stderr, "RESUME_EVENT_MISMATCH") {
		t.Errorf("resume --preflight of a completed run: exit %d %s", res.code, res.stderr)
	}
	if after := eventLines(t, r.runDir); !slices.Equal(ended, after) {
		t.Errorf("resume --preflight of a completed run appended events")
	}
}

// TestPreflightInterruptedProbe: a worker killed during the live probe
// leaves it open; the restarted worker refuses to start (PROTOCOL), so
// does resume; `obversa preflight interrupt` closes it once, while no
// worker holds the run, and the run carries on from the pause it records.
func TestPreflightInterruptedProbe(t *testing.T) {
	r := newPFRun(t)
	r.setReady(true)
	flag := filepath.Join(r.dir, "fault.flag")
	res, out := r.run(failpoint.Env + "=in-probe:w/live:" + flag)
	if res.code != exitFailed || out["code"] != "PROTOCOL" {
		log, _ := os.ReadFile(filepath.Join(r.runDir, "worker.log"))
		t.Fatalf("run: exit %d %v, want PROTOCOL: %s\nworker.log:\n%s", res.code, out, res.stderr, log)
	}
	if _, err := os.Stat(flag); err != nil {
		t.Fatalf("the fault did not fire: %v", err)
	}
	if n := len(recorded(t, r.runDir, "run:worker-exited")); n != 1 {
		t.Errorf("%d worker crashes recorded, want 1", n)
	}
	msg, _ := out["output"].(map[string]any)["message"].(string)
	if !strings.Contains(msg, "probe-4") || !strings.Contains(msg, "obversa preflight interrupt") {
		t.Errorf("PROTOCOL message %q does not name the probe and what to do", msg)
	}
	rep := r.report()
	if open, _ := rep["open_probe"].(map[string]any); open["probe_id"] != "probe-4" || open["check"] != "live" {
		t.Fatalf("report %v, want the live probe probe-4 open", rep)
	}
	if res := obversa(t, r.dir, "preflight", r.runDir); !strings.Contains(res.stdout, "open probe: probe-4") {
		t.Errorf("obversa preflight printed %q", res.stdout)
	}
	res = obversa(t, r.dir, "resume", r.runDir)
	if res.code != exitFailed || !strings.Contains(res.stderr, "PROTOCOL") || !strings.Contains(res.stderr, "probe-4") {
		t.Fatalf("resume with an open probe: exit %d %s", res.code, res.stderr)
	}

	// Not while something holds the run.
	run, err := store.OpenRunDir(context.Background(), r.runDir, store.Policy{})
	if err != nil {
		t.Fatal(err)
	}
	lock, err := run.Lock(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if res := obversa(t, r.dir, "preflight", "interrupt", r.runDir); res.code != exitUsage || !strings.Contains(res.stderr, "PROCESS_LOCKED") {
		t.Errorf("interrupt while the run is held: exit %d %s", res.code, res.stderr)
	}
	lock.Release()
	run.Close()

	res = obversa(t, r.dir, "preflight", "interrupt", r.runDir)
	id := strings.TrimSpace(res.stdout)
	if res.code != 0 || id != "preflight-pause-1" {
		t.Fatalf("interrupt: exit %d, printed %q: %s", res.code, res.stdout, res.stderr)
	}
	before := eventLines(t, r.runDir)
	if again := obversa(t, r.dir, "preflight", "interrupt", r.runDir); again.code != 0 || strings.TrimSpace(again.stdout) != id {
		t.Errorf("second interrupt: exit %d printed %q: %s", again.code, again.stdout, again.stderr)
	}
	if after := eventLines(t, r.runDir); !slices.Equal(before, after) {
		t.Errorf("a repeated interrupt appended events")
	}
	tail := before[len(before)-3:]
	if diff := cmp.Diff([]string{"preflight:probe-finished", "preflight:paused", "graph:run-waiting paused"}, tail); diff != "" {
		t.Errorf("interrupt events (-want +got):\n%s", diff)
	}
	if rep := r.report(); rep["phase"] != "paused" || rep["pause_reason"] != "interrupted" || rep["usage"] != "unknown" {
		t.Errorf("report after interrupt %v", rep)
	}
	if res, out := r.resume(id); res.code != 0 || out["kind"] != "complete" {
		t.Fatalf("resume %s: exit %d %v: %s", id, res.code, out, res.stderr)
	}
	// The fault fired before the live call: the first worker's static
	// check, then the resumed round.
	want := []string{"static", "static", "live:ready", "ordinary"}
	if diff := cmp.Diff(want, r.callsLog()); diff != "" {
		t.Errorf("mock calls (-want +got):\n%s", diff)
	}
	if res := obversa(t, r.dir, "preflight", "interrupt", r.runDir); res.code != exitUsage {
		t.Errorf("interrupt of an admitted run: exit %d %s", res.code, res.stderr)
	}
}
