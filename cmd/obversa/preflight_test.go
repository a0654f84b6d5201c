package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/obversa/obversa/internal/failpoint"
	"github.com/obversa/obversa/store"
)

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
