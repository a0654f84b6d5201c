package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// rulesHeader declares two mock engines from one binary: "mock" answers,
// "dead" fails every call with the kind given by DEADKIND.
const rulesHeader = `
teardown_grace = "1s"
plugin "mock" {
  type   = "engine"
  path   = "BIN/mock-engine"
  config = MOCKCONFIG
}
plugin "dead" {
  type   = "engine"
  path   = "BIN/mock-engine"
  config = { default = { fail = { kind = "DEADKIND", message = "no" } } }
}
plugin "shell" {
  type = "node"
  path = "BIN/cmd-engine"
}
`

// recorded returns the data of every event of type typ.
func recorded(t *testing.T, runDir, typ string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(runDir, "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	// Only complete lines: the test may read while a run appends.
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		b = b[:i]
	} else {
		b = nil
	}
	for _, line := range strings.Split(string(b), "\n") {
		if line == "" {
			continue
		}
		var e struct {
			Type string         `json:"type"`
			Data map[string]any `json:"data"`
		}
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatal(err)
		}
		if e.Type == typ {
			out = append(out, e.Data)
		}
	}
	return out
}

func rulesRun(t *testing.T, mockConfig, deadKind, body string) (string, string) {
	t.Helper()
	if mockConfig == "" {
		mockConfig = "{}"
	}
	if deadKind == "" {
		deadKind = "auth"
	}
	text := strings.NewReplacer("MOCKCONFIG", mockConfig, "DEADKIND", deadKind).Replace(rulesHeader) + body
	runFile := writeRunFile(t, text)
	dir := filepath.Dir(runFile)
	if r := obversa(t, dir, "plugin", "lock", runFile); r.code != 0 {
		t.Fatalf("lock: %s", r.stderr)
	}
	return runFile, dir
}

func TestEngineLaneRules(t *testing.T) {
	tests := []struct {
		name     string
		deadKind string
		lane     string
		code     string
		retired  int
		attempts []string // outcome per engine-attempt-recorded, in order
	}{
		{name: "auth retires and moves to the fallback", deadKind: "auth",
			lane:    `requested = { adapter = "dead", provider = "p1", model_family = "f", model = "m", tools = [] }` + "\n" + `fallbacks = [{ adapter = "mock", provider = "local", model_family = "scripted", model = "m1", tools = [] }]`,
			retired: 1, attempts: []string{"failed", "completed"}},
		{name: "model_unavailable retires and moves to the fallback", deadKind: "model_unavailable",
			lane:    `requested = { adapter = "dead", provider = "p1", model_family = "f", model = "m", tools = [] }` + "\n" + `fallbacks = [{ adapter = "mock", provider = "local", model_family = "scripted", model = "m1", tools = [] }]`,
			retired: 1, attempts: []string{"failed", "completed"}},
		{name: "rate_limit neither retires nor falls back", deadKind: "rate_limit",
			lane: `requested = { adapter = "dead", provider = "p1", model_family = "f", model = "m", tools = [] }` + "\n" + `fallbacks = [{ adapter = "mock", provider = "local", model_family = "scripted", model = "m1", tools = [] }]`,
			code: "DAG_NODE_FAILED", attempts: []string{"failed"}},
		{name: "every target dead is ENGINE_UNAVAILABLE", deadKind: "missing_cli",
			lane: `requested = { adapter = "dead", provider = "p1", model_family = "f", model = "m", tools = [] }`,
			code: "DAG_NODE_FAILED", retired: 1, attempts: []string{"failed"}},
		{name: "a provider the lane gives",
			lane:     `requested = { adapter = "mock", provider = "", model_family = "scripted", model = "m1", tools = [] }` + "\n" + `known_substitutions = [{ adapter = "mock", provider = "local", model_family = "scripted", model = "m1", tools = [] }]`,
			code:     "",
			attempts: []string{"completed"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			runFile, dir := rulesRun(t, "", tt.deadKind, "lane \"w\" {\n"+tt.lane+"\n}\n"+`
graph "dag" {
  retry_cap_per_node = 0
  node "a" {
    lane   = "w"
    prompt = "hello"
  }
}
`)
			r := obversa(t, dir, "run", "--run-id", "r", runFile)
			runDir := runDirOf(runFile, "r")
			res := recorded(t, runDir, "graph:run-finished")
			if len(res) != 1 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			if code, _ := res[0]["code"].(string); code != tt.code {
				t.Errorf("code %q, want %q (%v)", code, tt.code, res[0])
			}
			if got := len(recorded(t, runDir, "graph:model-unavailable")); got != tt.retired {
				t.Errorf("%d model-unavailable events, want %d", got, tt.retired)
			}
			var outcomes []string
			for i, a := range recorded(t, runDir, "graph:engine-attempt-recorded") {
				outcomes = append(outcomes, a["outcome"].(string))
				if seq := int(a["sequence"].(float64)); seq != i+1 {
					t.Errorf("attempt %d has sequence %d", i+1, seq)
				}
			}
			if !slices.Equal(outcomes, tt.attempts) {
				t.Errorf("engine attempts %v, want %v", outcomes, tt.attempts)
			}
			failed := recorded(t, runDir, "graph:node-failed")
			switch tt.name {
			case "every target dead is ENGINE_UNAVAILABLE":
				if len(failed) != 1 || failed[0]["code"] != "ENGINE_UNAVAILABLE" {
					t.Errorf("node-failed %v", failed)
				}
			case "a provider the lane gives":
				a := recorded(t, runDir, "graph:engine-attempt-recorded")
				if req, _ := a[0]["requested"].(map[string]any); req["provider"] != "local" {
					t.Errorf("the call went to %v, want provider local", a[0]["requested"])
				}
			}
		})
	}
}

const simpleLane = `
lane "w" {
  requested = { adapter = "mock", provider = "local", model_family = "scripted", model = "m1", tools = [] }
}
`

func TestApprovalPolicy(t *testing.T) {
	runFile, dir := rulesRun(t, "", "", simpleLane+`
graph "dag" {
  approval = ["a", "b"]
  node "a" {
    lane   = "w"
    prompt = "first"
  }
  node "b" {
    lane   = "w"
    prompt = "second"
  }
  node "c" {
    binding    = "shell"
    depends_on = ["a"]
    input      = { command = ["true"] }
    retry_safe = true
  }
}
`)
	r := obversa(t, dir, "run", "--run-id", "ap", runFile)
	runDir := runDirOf(runFile, "ap")
	if r.code != exitPaused {
		t.Fatalf("run: exit %d, want %d: %s", r.code, exitPaused, r.stderr)
	}
	st := status(t, runDir)
	if len(st.PauseReasons) != 2 || st.PauseReasons[0].Kind != "approval" || st.PauseReasons[1].Position != "dag/b/1" {
		t.Fatalf("pause reasons %+v, want both positions waiting for approval", st.PauseReasons)
	}
	// Resuming without an approval asks again.
	if r := obversa(t, dir, "resume", "--position", "dag/a/1", runDir); r.code != exitPaused {
		t.Fatalf("resume without approval: exit %d: %s", r.code, r.stderr)
	}
	if n := len(recorded(t, runDir, "graph:node-attempt-started")); n != 0 {
		t.Fatalf("%d attempts started without an approval", n)
	}
	if r := obversa(t, dir, "approve", "--no-resume", runDir, "dag/a/1"); r.code != 0 {
		t.Fatalf("approve: exit %d: %s", r.code, r.stderr)
	}
	// Resuming one open position leaves the run waiting on the other.
	if r := obversa(t, dir, "resume", "--position", "dag/a/1", runDir); r.code != exitPaused {
		t.Fatalf("resume a: exit %d: %s", r.code, r.stderr)
	}
	st = status(t, runDir)
	if len(st.PauseReasons) != 1 || st.PauseReasons[0].Position != "dag/b/1" {
		t.Fatalf("after resuming a: pause reasons %+v, want only dag/b/1", st.PauseReasons)
	}
	if r := obversa(t, dir, "approve", "--no-resume", "--deny", runDir, "dag/b/1"); r.code != 0 {
		t.Fatalf("deny: exit %d: %s", r.code, r.stderr)
	}
	if r := obversa(t, dir, "resume", "--position", "dag/b/1", runDir); r.code != exitFailed {
		t.Fatalf("resume b: exit %d: %s", r.code, r.stderr)
	}
	failed := recorded(t, runDir, "graph:node-failed")
	if len(failed) != 1 || failed[0]["code"] != "DENIED" || failed[0]["node"] != "b" {
		t.Fatalf("node-failed %v, want b DENIED", failed)
	}
	// A run that ended changes nothing on resume, and says so.
	before := eventLines(t, runDir)
	r = obversa(t, dir, "resume", runDir)
	if r.code != exitFailed || !strings.Contains(r.stderr, "nothing was changed") {
		t.Fatalf("resume of an ended run: exit %d: %s", r.code, r.stderr)
	}
	if after := eventLines(t, runDir); !slices.Equal(before, after) {
		t.Fatalf("resume of an ended run appended events")
	}
	if r := obversa(t, dir, "resume", "--position", "dag/zz/1", runDir); r.code == 0 {
		t.Fatalf("resume of an unknown position succeeded")
	}
	// stop of an ended run answers with the settled result and its exit
	// status, and records nothing.
	if r := obversa(t, dir, "stop", runDir); r.code != exitFailed || !strings.Contains(r.stdout, "the run already ended") ||
		!strings.Contains(r.stdout, "failed DAG_NODE_FAILED: b") {
		t.Fatalf("stop of an ended run: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	if after := eventLines(t, runDir); !slices.Equal(before, after) {
		t.Fatalf("stop of an ended run appended events")
	}
}

// TestIdentityUnresolved: a lane target whose provider neither the run
// file nor the lane gives is refused by validate and by run, before any
// work: nothing is recorded.
func TestIdentityUnresolved(t *testing.T) {
	t.Parallel()
	runFile := writeRunFile(t, strings.NewReplacer("MOCKCONFIG", "{}", "DEADKIND", "auth").Replace(rulesHeader)+`
lane "w" {
  requested = { adapter = "mock", model_family = "scripted", model = "m1", tools = [] }
}
graph "dag" {
  node "a" {
    lane   = "w"
    prompt = "hello"
  }
}
`)
	dir := filepath.Dir(runFile)
	for _, args := range [][]string{{"validate", runFile}, {"run", "--lock", "--run-id", "u", runFile}} {
		r := obversa(t, dir, args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, `Lane "w": the requested target has no provider`) || !strings.Contains(r.stderr, "ENGINE_IDENTITY_UNRESOLVED") {
			t.Errorf("%s: exit %d, want %d and ENGINE_IDENTITY_UNRESOLVED:\n%s", args[0], r.code, exitUsage, r.stderr)
		}
	}
	if _, err := os.Stat(runDirOf(runFile, "u")); !os.IsNotExist(err) {
		t.Errorf("a refused run left a record: %v", err)
	}
}

// TestStopPausedRun: a paused run with no watchdog is ended STOPPED by
// obversa stop, and nothing runs after that.
func TestStopPausedRun(t *testing.T) {
	runFile, dir := rulesRun(t, "", "", simpleLane+`
graph "dag" {
  approval = ["a"]
  node "a" {
    lane   = "w"
    prompt = "first"
  }
}
`)
	if r := obversa(t, dir, "run", "--run-id", "sp", runFile); r.code != exitPaused {
		t.Fatalf("run: exit %d: %s", r.code, r.stderr)
	}
	runDir := runDirOf(runFile, "sp")
	if r := obversa(t, dir, "stop", "--yes", runDir); r.code != 0 {
		t.Fatalf("stop: exit %d: %s", r.code, r.stderr)
	}
	res := recorded(t, runDir, "graph:run-finished")
	if len(res) != 1 || res[0]["code"] != "STOPPED" {
		t.Fatalf("run-finished %v, want STOPPED", res)
	}
	if st := status(t, runDir); st.Phase != "stopped" {
		t.Fatalf("phase %q, want stopped", st.Phase)
	}
}
