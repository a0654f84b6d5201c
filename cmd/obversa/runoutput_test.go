package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runFinished returns the data of the run's graph:run-finished and the
// length of its line in the record.
func runFinished(t *testing.T, runDir string) (map[string]any, int) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(runDir, "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.Contains(line, `"type":"graph:run-finished"`) {
			var e struct {
				Data map[string]any `json:"data"`
			}
			if err := json.Unmarshal([]byte(line), &e); err != nil {
				t.Fatal(err)
			}
			return e.Data, len(line)
		}
	}
	t.Fatalf("%s records no graph:run-finished", runDir)
	return nil, 0
}

// TestLargeRunOutput: an output too large for graph:run-finished leaves
// the node results where the record holds them (from_record), and
// `run --json` still prints the whole of it.
func TestLargeRunOutput(t *testing.T) {
	answer := strings.Repeat("z", 600)
	runFile, _ := rulesRun(t, `{ default = { text = "`+answer+`" } }`, "", simpleLane+`
storage {
  max_event_payload_bytes = 2048
  max_batch_bytes         = 65536
}
graph "dag" {
  node "a" {
    lane   = "w"
    prompt = "a"
  }
  node "b" {
    lane   = "w"
    prompt = "b"
  }
  node "c" {
    lane   = "w"
    prompt = "c"
  }
}
`)
	r, res := runJSON(t, runFile, "--run-id", "big")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	fin, _ := runFinished(t, runDirOf(runFile, "big"))
	if out := fin["output"].(map[string]any); out["from_record"] != true || out["nodes"] != nil {
		t.Fatalf("run-finished %v, want its nodes left in the record (from_record)", fin)
	}
	nodes, _ := res["output"].(map[string]any)["nodes"].(map[string]any)
	if len(nodes) != 3 || nodes["c"] != answer {
		t.Fatalf("run --json output nodes %v, want the three answers", nodes)
	}
}

// TestRunOutputNeverFailsPassedNodes (issue 13, case 4): 30 nodes print
// 40 000 bytes each; every node passes, so the run completes, though its
// output (1.2 MB) is larger than max_artifact_bytes (1 MiB): the output
// names the node results the record holds instead of copying them.
func TestRunOutputNeverFailsPassedNodes(t *testing.T) {
	const nodes, size = 30, 40000
	var body strings.Builder
	body.WriteString("restart {\n  max_restarts = 1\n  initial_backoff = \"10ms\"\n  max_backoff = \"10ms\"\n}\ngraph \"dag\" {\n  global_concurrency = 8\n")
	for i := 1; i <= nodes; i++ {
		fmt.Fprintf(&body, "  node \"n%d\" {\n    binding    = \"shell\"\n    input      = { command = [\"sh\", \"-c\", \"printf '%%%ds' '' | tr ' ' x\"] }\n    retry_safe = true\n  }\n", i, size)
	}
	body.WriteString("}\n")
	runFile, dir := rulesRun(t, "", "", body.String())
	r, res := runJSON(t, runFile, "--run-id", "wide")
	runDir := runDirOf(runFile, "wide")
	if r.code != 0 || res["kind"] != "complete" {
		t.Fatalf("exit %d, result %.300v: %s", r.code, res, r.stderr)
	}
	out, _ := res["output"].(map[string]any)["nodes"].(map[string]any)
	if len(out) != nodes {
		t.Fatalf("run --json printed %d node results, want %d", len(out), nodes)
	}
	for id, v := range out {
		if s, _ := v.(map[string]any)["stdout"].(string); len(s) != size {
			t.Fatalf("node %s printed %d bytes in the output, want %d", id, len(s), size)
		}
	}
	fin, n := runFinished(t, runDir)
	if o := fin["output"].(map[string]any); o["from_record"] != true || n > 2048 {
		t.Fatalf("run-finished is %d bytes (%.200v), want a small event naming the record", n, fin)
	}
	if got := countEvents(t, runDir, "run:worker-exited"); got != 0 {
		t.Errorf("%d worker exits, want none", got)
	}
	st := obversa(t, dir, "status", "--json", runDir)
	var rep struct {
		Result struct {
			Output struct {
				Nodes map[string]json.RawMessage `json:"nodes"`
			} `json:"output"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(st.stdout), &rep); err != nil || len(rep.Result.Output.Nodes) != nodes {
		t.Fatalf("status --json result has %d nodes (%v): %.300s", len(rep.Result.Output.Nodes), err, st.stdout)
	}
	if v := obversa(t, dir, "verify", runDir); v.code != 0 {
		t.Fatalf("verify: exit %d: %s%s", v.code, v.stdout, v.stderr)
	}
}

// TestPauseAnchorOfALargeWorkspace: a workspace whose snapshot is larger
// than max_artifact_bytes still gets its pause recorded: the anchor is
// kept as the snapshot's digest, a resume finds an edit by it, and once
// the edit is undone the run carries on.
func TestPauseAnchorOfALargeWorkspace(t *testing.T) {
	runFile := writeRunFile(t, strings.NewReplacer("MOCKCONFIG", "{}", "DEADKIND", "auth").Replace(rulesHeader)+simpleLane+`
workspace {
  root     = "ws"
  provider = "files"
}
storage {
  max_artifact_bytes = 4096
}
graph "dag" {
  approval = ["a"]
  node "a" {
    binding    = "shell"
    input      = { command = ["true"] }
    retry_safe = true
  }
}
`)
	dir := filepath.Dir(runFile)
	ws := filepath.Join(dir, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 200; i++ {
		if err := os.WriteFile(filepath.Join(ws, fmt.Sprintf("file-%03d.txt", i)), []byte(fmt.Sprint(i)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if r := obversa(t, dir, "plugin", "lock", runFile); r.code != 0 {
		t.Fatalf("lock: %s", r.stderr)
	}
	r := obversa(t, dir, "run", "--run-id", "ws", runFile)
	runDir := runDirOf(runFile, "ws")
	if r.code != exitPaused {
		t.Fatalf("run: exit %d, want %d (paused for approval): %s", r.code, exitPaused, r.stderr)
	}
	anchors := recorded(t, runDir, "run:pause-anchor")
	if len(anchors) != 1 || anchors[0]["anchor"] != nil || anchors[0]["digest"] == "" || anchors[0]["files"] != float64(200) {
		t.Fatalf("pause anchors %v, want one kept as the digest of 200 files", anchors)
	}
	if r := obversa(t, dir, "approve", "--no-resume", runDir, "dag/a/1"); r.code != 0 {
		t.Fatalf("approve: exit %d: %s", r.code, r.stderr)
	}
	edited := filepath.Join(ws, "file-007.txt")
	if err := os.WriteFile(edited, []byte("edited"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := obversa(t, dir, "resume", "--position", "dag/a/1", runDir); r.code == 0 || !strings.Contains(r.stderr, "WORKSPACE_DRIFT") {
		t.Fatalf("resume after an edit: exit %d: %s", r.code, r.stderr)
	}
	if err := os.WriteFile(edited, []byte("7"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := obversa(t, dir, "resume", "--position", "dag/a/1", runDir); r.code != 0 {
		t.Fatalf("resume after undoing the edit: exit %d: %s", r.code, r.stderr)
	}
}
