package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/obversa/obversa/internal/failpoint"
)

// usageRunFile is a chain a → b → c on the mock engine, with LIMITS as
// its limits block and the mock's RESPONSES.
const usageRunFile = `
teardown_grace = "1s"
limits {
  LIMITS
}
restart {
  max_restarts    = 1
  initial_backoff = "50ms"
  max_backoff     = "50ms"
}
plugin "mock" {
  type   = "engine"
  path   = "BIN/mock-engine"
  config = { responses = [RESPONSES] }
}
lane "w" {
  requested = { adapter = "mock", provider = "local", model_family = "scripted", model = "m1", tools = [] }
}
graph "dag" {
  approval = [APPROVAL]
  node "a" {
    lane       = "w"
    prompt     = "first"
    retry_safe = true
  }
  node "b" {
    lane       = "w"
    prompt     = "second"
    depends_on = ["a"]
    retry_safe = true
  }
  node "c" {
    lane       = "w"
    prompt     = "third"
    depends_on = ["b"]
  }
}
`

func usageRun(t *testing.T, limits, responses, approval string) string {
	t.Helper()
	runFile := writeRunFile(t, strings.NewReplacer("LIMITS", limits, "RESPONSES", responses, "APPROVAL", approval).Replace(usageRunFile))
	if r := obversa(t, filepath.Dir(runFile), "plugin", "lock", runFile); r.code != 0 {
		t.Fatal(r.stderr)
	}
	return runFile
}

// TestBudgetStop: once the known output total passes max_output_tokens,
// nothing new is dispatched and the run ends BUDGET_STOP naming the
// budget; an unmeasured call under stop_on_unmeasured does the same; the
// result carries the usage totals, per lane too.
func TestBudgetStop(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, limits, responses, budget string
		dispatched                      int
	}{
		{"max_output_tokens", "max_output_tokens = 5", `{ node = "a", text = "a long enough answer to pass five tokens" }`, "max_output_tokens", 1},
		{"max_input_tokens", "max_input_tokens = 100", `{ node = "a", text = "x", usage = { input = 150, output = 1 } }`, "max_input_tokens", 1},
		{"stop_on_unmeasured", "stop_on_unmeasured = true", `{ node = "b", text = "x", usage = "unknown" }`, "stop_on_unmeasured", 2},
		{"under the budget", "max_output_tokens = 100000", `{ node = "a", text = "x" }`, "", 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			runFile := usageRun(t, tt.limits, tt.responses, "")
			r := obversa(t, filepath.Dir(runFile), "run", "--run-id", "b", runFile)
			runDir := runDirOf(runFile, "b")
			fin := recorded(t, runDir, "graph:run-finished")
			if len(fin) != 1 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			usage, _ := fin[0]["usage"].(map[string]any)
			lanes, _ := usage["lanes"].(map[string]any)
			if usage == nil || lanes["w"] == nil || usage["output"] == nil || usage["unmeasured_calls"] == nil {
				t.Errorf("run-finished usage %v, want totals and lane w", fin[0]["usage"])
			}
			if n := len(recorded(t, runDir, "graph:node-dispatched")); n != tt.dispatched {
				t.Errorf("%d dispatches, want %d", n, tt.dispatched)
			}
			if tt.budget == "" {
				if r.code != 0 || fin[0]["kind"] != "complete" || !strings.Contains(r.stdout, "tokens: input ") {
					t.Errorf("exit %d, result %v\n%s", r.code, fin[0], r.stdout)
				}
				return
			}
			out, _ := fin[0]["output"].(map[string]any)
			if r.code != exitFailed || fin[0]["code"] != "BUDGET_STOP" || out["budget"] != tt.budget ||
				!strings.Contains(r.stdout, "failed BUDGET_STOP ("+tt.budget+": used ") {
				t.Errorf("exit %d, result %v; want BUDGET_STOP naming %s\n%s", r.code, fin[0], tt.budget, r.stdout)
			}
		})
	}
}

// TestUnfinishedCallIsUnknown: a node whose engine call is in flight reads
// unknown in status --json, never missing or zero; when the run is stopped
// under it, the call is recorded unmeasured, the position ends ABORTED,
// nothing stays active and the cleanup is verified.
func TestUnfinishedCallIsUnknown(t *testing.T) {
	t.Parallel()
	runFile := usageRun(t, `timeout = "5m"`, `{ node = "a", text = "slow", delay = "30s" }`, "")
	dir := filepath.Dir(runFile)
	cmd, out := startRun(t, dir, runFile, "u")
	runDir := runDirOf(runFile, "u")
	waitAttempts(t, runDir, 1, "the first attempt")
	st := status(t, runDir)
	if len(st.Active) != 1 || len(st.Usage) != 1 || st.Usage[0].Node != "a" || st.Usage[0].Usage != "unknown" {
		t.Errorf("in flight: active %v, usage %+v; want a unknown", st.Active, st.Usage)
	}
	if r := obversa(t, dir, "stop", "--yes", runDir); r.code != 0 {
		t.Fatalf("stop: exit %d: %s", r.code, r.stderr)
	}
	_ = cmd.Wait()
	st = status(t, runDir)
	failed := recorded(t, runDir, "graph:node-failed")
	if st.Phase != "stopped" || len(st.Active) != 0 || st.CleanupVerified == nil || !*st.CleanupVerified ||
		len(st.Usage) != 1 || st.Usage[0].Usage != "unknown" || st.UsageTotals.UnmeasuredCalls != 1 ||
		len(failed) != 1 || failed[0]["code"] != "ABORTED" {
		t.Errorf("after stop: %+v, node-failed %v\n%s", st, failed, out.String())
	}
}

// TestStatusAfterTheEnd: every terminal result leaves cleanup_verified
// set and nothing active — a completed run, failed ones, a TIMEOUT — and
// a node's failure has the documented code: EFFECT_FAILED for a failed
// effect, ABORTED for an attempt its plugin or the run's end cancelled.
func TestStatusAfterTheEnd(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, limits, responses, phase, result, nodeCode string }{
		{"completed", `timeout = "5m"`, `{ node = "a", text = "x" }`, "completed", "", ""},
		{"effect failed", `timeout = "5m"`, `{ node = "a", fail = { kind = "unknown", message = "no" } }`, "failed", "DAG_NODE_FAILED", "EFFECT_FAILED"},
		{"aborted by its plugin", `timeout = "5m"`, `{ node = "a", fail = { kind = "aborted", message = "cancelled upstream" } }`, "failed", "DAG_NODE_FAILED", "ABORTED"},
		{"timeout", `timeout = "2s"`, `{ node = "a", text = "x", delay = "30s" }`, "failed", "TIMEOUT", "ABORTED"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			runFile := usageRun(t, tt.limits, tt.responses, "")
			r := obversa(t, filepath.Dir(runFile), "run", "--run-id", "e", runFile)
			runDir := runDirOf(runFile, "e")
			st := status(t, runDir)
			if st.Phase != tt.phase || len(st.Active) != 0 || st.CleanupVerified == nil || !*st.CleanupVerified {
				t.Errorf("exit %d: %+v\n%s", r.code, st, r.stderr)
			}
			fin := recorded(t, runDir, "graph:run-finished")
			failed := recorded(t, runDir, "graph:node-failed")
			if len(fin) != 1 || fin[0]["code"] != tt.result || (tt.nodeCode != "" && (len(failed) == 0 || failed[0]["code"] != tt.nodeCode)) {
				t.Errorf("result %v, node-failed %v; want %q and %q", fin, failed, tt.result, tt.nodeCode)
			}
		})
	}
}

// TestRestartBudgetKeptAcrossResume: a pause restores no restart: a run
// that used its only restart before pausing ends RESTART_EXHAUSTED at the
// next crash after a resume, and status says so before.
func TestRestartBudgetKeptAcrossResume(t *testing.T) {
	t.Parallel()
	runFile := usageRun(t, `timeout = "5m"`, `{ node = "a", text = "x" }`, `"b"`)
	dir := filepath.Dir(runFile)
	r := obversaEnv(t, dir, []string{failpoint.Env + "=after-start:a:" + filepath.Join(dir, "one.flag")}, "run", "--run-id", "r", runFile)
	runDir := runDirOf(runFile, "r")
	st := status(t, runDir)
	if r.code != exitPaused || st.RestartsUsed != 1 || st.RestartsLeft != 0 {
		t.Fatalf("run: exit %d, restarts used %d left %d; want paused, 1, 0\n%s", r.code, st.RestartsUsed, st.RestartsLeft, r.stderr)
	}
	// approve carries the run on; its worker crashes once more.
	r = obversaEnv(t, dir, []string{failpoint.Env + "=after-start:b:" + filepath.Join(dir, "two.flag")}, "approve", runDir, "dag/b/1")
	if fin := recorded(t, runDir, "graph:run-finished"); r.code != exitFailed || len(fin) != 1 || fin[0]["code"] != "RESTART_EXHAUSTED" {
		t.Fatalf("approve: exit %d, result %v; want RESTART_EXHAUSTED\n%s", r.code, fin, r.stderr)
	}
}

// TestOutputFitsNeitherEventNorArtifact: a run whose output fits
// neither an event nor an artifact still completes: the result leaves
// the node results in the record (from_record), and the CLI prints them.
func TestOutputFitsNeitherEventNorArtifact(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 2000)
	responses := `{ node = "a", text = "` + long + `" }, { node = "b", text = "` + long + `" }, { node = "c", text = "` + long + `" }`
	runFile := usageRun(t, `timeout = "5m"`, responses, "")
	text := strings.Replace(string(mustRead(t, runFile)), "teardown_grace", "storage {\n  max_event_payload_bytes = 4096\n  max_artifact_bytes = 4096\n}\nteardown_grace", 1)
	if err := os.WriteFile(runFile, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := obversa(t, filepath.Dir(runFile), "plugin", "lock", runFile); r.code != 0 {
		t.Fatal(r.stderr)
	}
	r := obversa(t, filepath.Dir(runFile), "run", "--run-id", "t", runFile)
	fin := recorded(t, runDirOf(runFile, "t"), "graph:run-finished")
	if r.code != 0 || len(fin) != 1 || fin[0]["kind"] != "complete" {
		t.Fatalf("exit %d, result %v; want complete\n%s%s", r.code, fin, r.stdout, r.stderr)
	}
	if out, _ := fin[0]["output"].(map[string]any); out["from_record"] != true {
		t.Fatalf("result %v; want its node results left in the record (from_record)", fin[0])
	}
}
