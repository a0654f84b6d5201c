package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDeletedArtifactsPause: the artifact holding a passed node's result
// is deleted while the run is paused; carrying the run on pauses it again
// with ARTIFACT_NOT_FOUND naming the digest and the node, instead of
// failing the node that reads it INPUT_RENDER, and once the file is back
// the run completes.
func TestDeletedArtifactsPause(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 3000)
	runFile, dir := rulesRun(t, `{ responses = [{ node = "big", text = "`+long+`" }] }`, "", simpleLane+`
storage {
  max_event_payload_bytes = 2048
  max_artifact_bytes      = 8192
}
graph "dag" {
  approval = ["reader"]
  node "big" {
    lane   = "w"
    prompt = "a long answer"
  }
  node "reader" {
    binding    = "shell"
    depends_on = ["big"]
    input      = { command = ["wc", "-c"], stdin = "${input.results.big}" }
    retry_safe = true
  }
}
`)
	r := obversa(t, dir, "run", "--run-id", "art", runFile)
	runDir := runDirOf(runFile, "art")
	if r.code != exitPaused {
		t.Fatalf("run: exit %d, want paused for approval: %s", r.code, r.stderr)
	}
	completed := recorded(t, runDir, "graph:node-completed")
	if len(completed) != 1 || completed[0]["result_artifact"] == nil {
		t.Fatalf("completed %v, want big's result kept as an artifact", completed)
	}
	digest := completed[0]["result_artifact"].(map[string]any)["digest"].(string)
	blob := filepath.Join(runDir, "artifacts", "sha256", strings.TrimPrefix(digest, "sha256:"))
	kept, err := os.ReadFile(blob)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(blob); err != nil {
		t.Fatal(err)
	}

	r = obversa(t, dir, "approve", "--json", runDir, "dag/reader/1")
	var res map[string]any
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &res); err != nil {
		t.Fatalf("approve printed %q (exit %d, stderr %q): %v", r.stdout, r.code, r.stderr, err)
	}
	out, _ := res["output"].(map[string]any)
	arts, _ := out["artifacts"].([]any)
	if r.code != exitPaused || res["code"] != "ARTIFACT_NOT_FOUND" || len(arts) != 1 || !strings.Contains(out["message"].(string), digest) {
		t.Fatalf("approve: exit %d, result %v; want a pause ARTIFACT_NOT_FOUND naming %s", r.code, res, digest)
	}
	if a := arts[0].(map[string]any); a["digest"] != digest || a["node"] != "big" {
		t.Errorf("artifact %v, want %s of node big", a, digest)
	}
	if f := recorded(t, runDir, "graph:node-failed"); len(f) != 0 {
		t.Errorf("nodes failed for a missing artifact: %v", f)
	}
	// Still missing: resume pauses again.
	r = obversa(t, dir, "resume", runDir)
	if r.code != exitPaused || !strings.Contains(r.stdout, "ARTIFACT_NOT_FOUND") {
		t.Fatalf("resume with the artifact still missing: exit %d: %s %s", r.code, r.stdout, r.stderr)
	}
	if err := os.WriteFile(blob, kept, 0o444); err != nil {
		t.Fatal(err)
	}
	r = obversa(t, dir, "resume", "--json", runDir)
	if r.code != 0 || !strings.Contains(r.stdout, `"kind":"complete"`) {
		t.Fatalf("resume with the artifact restored: exit %d: %s %s", r.code, r.stdout, r.stderr)
	}
}
