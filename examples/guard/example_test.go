// Package guard_test runs the guard example: the guard policy allows the
// check and the summary, pauses the publish step on "git push" until a
// person approves it, and denies the scratch step, which runs dd.
package guard_test

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/obversa/obversa/internal/exampletest"
	"github.com/obversa/obversa/plugin"
)

// binDir holds obversa and the plugins the run file names.
var binDir string

func TestMain(m *testing.M) {
	os.Exit(exampletest.BundledMain(m, &binDir, "mock-engine", "cmd-engine", "./examples/plugins/guard"))
}

// decision is what the test reads of graph:action-decided.
type decision struct {
	Node    string `json:"node"`
	Verdict string `json:"verdict"`
	Policy  string `json:"policy"`
	Digest  string `json:"digest"`
}

func TestGuardExample(t *testing.T) {
	obversa := filepath.Join(binDir, "obversa")
	runFile := exampletest.PrepareExample(t, obversa, "run.hcl", "../../bin/guard", filepath.Join(binDir, "guard"),
		func(s string) string { return strings.ReplaceAll(s, `"../../bin/`, `"`+binDir+`/`) })
	dir := filepath.Dir(runFile)
	runDir := filepath.Join(dir, ".obversa", "default", "runs", "g")
	const reason = `command "git push --dry-run origin main" matches "git push"`

	// The run pauses on the publish step, saying why.
	code, out, stderr := exampletest.Obversa(t, obversa, dir, "run", "--run-id", "g", runFile)
	if code != 3 || !strings.Contains(out, "paused at dag/publish/1 (approval, policy guard): "+reason) {
		t.Fatalf("run: exit %d, want 3 and the reason\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
	}
	_, status, _ := exampletest.Obversa(t, obversa, dir, "status", runDir)
	if !strings.Contains(status, "waiting:  dag/publish/1 (approval, policy guard): "+reason) {
		t.Errorf("status does not show the reason:\n%s", status)
	}
	_, js, _ := exampletest.Obversa(t, obversa, dir, "status", "--json", runDir)
	var st struct {
		PauseReasons []struct{ Kind, Position, Reason, Policy string } `json:"pause_reasons"`
	}
	if err := json.Unmarshal([]byte(js), &st); err != nil || len(st.PauseReasons) != 1 || st.PauseReasons[0].Policy != "guard" ||
		st.PauseReasons[0].Kind != "approval" || !strings.Contains(st.PauseReasons[0].Reason, reason) {
		t.Errorf("status --json pause reasons %+v (%v)", st.PauseReasons, err)
	}

	// Every decision is recorded with the guard's name and pinned digest.
	sum, err := plugin.FileSHA256(filepath.Join(binDir, "guard"))
	if err != nil {
		t.Fatal(err)
	}
	verdicts := map[string]string{}
	for _, d := range decisions(t, runDir) {
		verdicts[d.Node] = d.Verdict
		if d.Policy != "guard" || d.Digest != "sha256:"+sum {
			t.Errorf("decision %+v, want policy guard with digest sha256:%s", d, sum)
		}
	}
	if diff := cmp.Diff(map[string]string{"check": "allow", "scratch": "deny", "summary": "allow", "publish": "wait"}, verdicts); diff != "" {
		t.Errorf("verdicts (-want +got):\n%s", diff)
	}

	// A person approves the push; the run carries on and ends failed on
	// the denied step, whose reason the summary gives.
	code, out, stderr = exampletest.Obversa(t, obversa, dir, "approve", runDir, "dag/publish/1")
	want := `scratch: DENIED denied by policy "guard": command "dd if=/dev/zero of=scratch.img bs=1k count=1" runs dd, which the guard's deny_binaries lists`
	if code != 1 || !strings.Contains(out, "failed DAG_NODE_FAILED: scratch") || !strings.Contains(out, want) {
		t.Fatalf("approve: exit %d, want 1 with the denial\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
	}
	if n := len(decisions(t, runDir)); n != 4 {
		t.Errorf("%d decisions recorded; an approved position is not asked again", n)
	}
	if !strings.Contains(readEvents(t, runDir), `"stdout":"no remote: nothing pushed\n"`) {
		t.Errorf("the approved publish step did not run")
	}
}

// decisions returns the run's graph:action-decided events.
func decisions(t *testing.T, runDir string) []decision {
	t.Helper()
	var out []decision
	sc := bufio.NewScanner(strings.NewReader(readEvents(t, runDir)))
	sc.Buffer(nil, 1<<22)
	for sc.Scan() {
		var e struct {
			Type string   `json:"type"`
			Data decision `json:"data"`
		}
		if json.Unmarshal(sc.Bytes(), &e) == nil && e.Type == "graph:action-decided" {
			out = append(out, e.Data)
		}
	}
	return out
}

func readEvents(t *testing.T, runDir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(runDir, "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
