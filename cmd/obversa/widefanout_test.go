package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// TestWideDecisionFitsTheRecord: a decision wider than one event or one
// append holds — here 240 ready nodes under a global concurrency of 240,
// with max_event_payload_bytes 4096 and max_batch_bytes 65536 — is recorded
// in parts (docs/decisions.md, "A large dispatch decision is recorded in
// parts") and the run completes, rather than its worker failing on the
// record's limit at every restart until RESTART_EXHAUSTED.
func TestWideDecisionFitsTheRecord(t *testing.T) {
	t.Parallel()
	const n = 240
	var b strings.Builder
	fmt.Fprintf(&b, "storage {\n  max_event_payload_bytes = 4096\n  max_batch_bytes = 65536\n}\n")
	fmt.Fprintf(&b, "limits {\n  max_dispatches = %d\n}\n", 2*n)
	b.WriteString(`plugin "mock" {
  type = "engine"
  path = "BIN/mock-engine"
}
lane "w" {
  requested = { adapter = "mock", provider = "local", model_family = "scripted", model = "m1", tools = [] }
}
`)
	fmt.Fprintf(&b, "graph \"dag\" {\n  global_concurrency = %d\n", n)
	for i := range n {
		fmt.Fprintf(&b, "  node \"a-node-with-a-long-name-%04d\" {\n    lane   = \"w\"\n    prompt = \"p\"\n  }\n", i)
	}
	b.WriteString("}\n")
	runFile := writeRunFile(t, b.String())
	dir := filepath.Dir(runFile)
	r, out := runJSON(t, runFile, "--run-id", "wide")
	if r.code != 0 || out["kind"] != "complete" {
		t.Fatalf("run: exit %d, %v\n%s", r.code, out, r.stderr)
	}
	runDir := runDirOf(runFile, "wide")
	parts := recorded(t, runDir, "graph:node-dispatched")
	dispatched := 0
	for _, p := range parts {
		dispatched += len(p["dispatches"].([]any))
	}
	if dispatched != n || len(parts) < 2 {
		t.Fatalf("%d positions in %d node-dispatched events, want %d in several", dispatched, len(parts), n)
	}
	if crashed := recorded(t, runDir, "run:worker-exited"); len(crashed) != 0 {
		t.Fatalf("the worker exited %d times: %v", len(crashed), crashed)
	}
	if r := obversa(t, dir, "verify", runDir); r.code != 0 {
		t.Fatalf("verify: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
}
