package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite golden files")

// eventLines returns one line per recorded event, "type node position"
// (graph events) or "type" (others), read from the run's events.jsonl
// through `obversa events --json`.
func eventLines(t *testing.T, dir string) []string {
	t.Helper()
	r := obversa(t, dir, "events", "--json", dir)
	if r.code != 0 {
		t.Fatalf("obversa events: exit %d: %s", r.code, r.stderr)
	}
	var lines []string
	sc := bufio.NewScanner(strings.NewReader(r.stdout))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e struct {
			Type string `json:"type"`
			Data struct {
				Node       string `json:"node"`
				Position   string `json:"position"`
				Kind       string `json:"kind"`
				Dispatches []struct {
					Position string `json:"position"`
				} `json:"dispatches"`
			} `json:"data"`
		}
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("event line %q: %v", sc.Text(), err)
		}
		line := e.Type
		switch {
		case len(e.Data.Dispatches) > 0:
			var ps []string
			for _, d := range e.Data.Dispatches {
				ps = append(ps, d.Position)
			}
			line += " " + strings.Join(ps, ",")
		case e.Data.Position != "":
			line += " " + e.Data.Position
		case e.Data.Kind != "":
			line += " " + e.Data.Kind
		}
		lines = append(lines, line)
	}
	return lines
}

func golden(t *testing.T, name string, lines []string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	got := strings.Join(lines, "\n") + "\n"
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Fatalf("%s (-want +got):\n%s", path, diff)
	}
}

// runJSON runs `obversa run --json` and decodes the result object.
func runJSON(t *testing.T, runFile string, args ...string) (result, map[string]any) {
	t.Helper()
	dir := filepath.Dir(runFile)
	if r := obversa(t, dir, "plugin", "lock", runFile); r.code != 0 {
		t.Fatalf("plugin lock: exit %d: %s", r.code, r.stderr)
	}
	r := obversa(t, dir, append(append([]string{"run", "--json"}, args...), runFile)...)
	var res map[string]any
	if err := json.Unmarshal([]byte(strings.TrimSpace(r.stdout)), &res); err != nil {
		t.Fatalf("run --json printed %q (stderr %q): %v", r.stdout, r.stderr, err)
	}
	return r, res
}

func runDirOf(runFile, id string) string {
	return filepath.Join(filepath.Dir(runFile), ".obversa", "default", "runs", id)
}

func TestQuickstartEndToEnd(t *testing.T) {
	runFile := example(t, "quickstart")
	r, res := runJSON(t, runFile, "--run-id", "qs")
	if r.code != 0 || res["kind"] != "complete" {
		t.Fatalf("exit %d, result %v, stderr:\n%s", r.code, res, r.stderr)
	}
	out := res["output"].(map[string]any)["nodes"].(map[string]any)
	if draft, _ := out["draft"].(string); !strings.Contains(draft, "Write a haiku about durable logs.") {
		t.Errorf("draft %q does not quote its prompt", draft)
	}
	count := out["count"].(map[string]any)
	if count["exit_code"].(float64) != 0 || strings.TrimSpace(count["stdout"].(string)) == "" {
		t.Errorf("count = %v", count)
	}
	if report, _ := out["report"].(string); !strings.Contains(report, "wc -w said") {
		t.Errorf("report %q was not rendered from the results", report)
	}
	dir := runDirOf(runFile, "qs")
	golden(t, "quickstart.events.golden", eventLines(t, dir))
	if v := obversa(t, dir, "verify", dir); v.code != 0 || !strings.HasPrefix(v.stdout, "ok: ") {
		t.Errorf("verify: exit %d: %s %s", v.code, v.stdout, v.stderr)
	}
	st := obversa(t, dir, "status", "--json", dir)
	var rep struct {
		Phase string `json:"phase"`
		Usage []struct {
			Node  string `json:"node"`
			Usage any    `json:"usage"`
		} `json:"usage"`
	}
	if err := json.Unmarshal([]byte(st.stdout), &rep); err != nil {
		t.Fatalf("status --json: %v: %s", err, st.stdout)
	}
	if rep.Phase != "completed" || len(rep.Usage) != 2 {
		t.Errorf("status = %+v", rep)
	}
	// Re-running with the same id is refused and changes nothing.
	before := eventLines(t, dir)
	if r := obversa(t, filepath.Dir(runFile), "run", "--run-id", "qs", runFile); r.code != exitUsage || !strings.Contains(r.stderr, "qs") {
		t.Errorf("second run with the same id: exit %d: %s", r.code, r.stderr)
	}
	if diff := cmp.Diff(before, eventLines(t, dir)); diff != "" {
		t.Errorf("record changed (-before +after):\n%s", diff)
	}
}

func TestRepoHealthEndToEnd(t *testing.T) {
	runFile := example(t, "repo-health", `root          = "../.."`, `root          = "`+repoRoot+`"`)
	r, res := runJSON(t, runFile, "--run-id", "rh")
	if r.code != 0 || res["kind"] != "complete" {
		t.Fatalf("exit %d, result %v, stderr:\n%s", r.code, res, r.stderr)
	}
	nodes := res["output"].(map[string]any)["nodes"].(map[string]any)
	files := nodes["files"].(map[string]any)["stdout"].(string)
	if strings.TrimSpace(files) == "0" || strings.TrimSpace(files) == "" {
		t.Errorf("file count %q", files)
	}
	vet := nodes["vet"].(map[string]any)["stdout"].(string)
	if !strings.Contains(vet, "go vet exit status: ") {
		t.Errorf("vet output %v", nodes["vet"])
	}
	// The commands run confined (docs/confinement.md): go vet's build
	// cache, declared in the example's confine block, stays writable.
	for _, refused := range []string{"permission denied", "read-only file system"} {
		if strings.Contains(strings.ToLower(vet), refused) {
			t.Errorf("go vet was refused under the example's confinement:\n%s", vet)
		}
	}
	if s, _ := nodes["summary"].(string); !strings.Contains(s, "Tracked files:") {
		t.Errorf("summary %q was not rendered from the data nodes", s)
	}
	// Four data nodes run in parallel, so only the multiset of events is
	// stable; the golden file holds it sorted.
	lines := eventLines(t, runDirOf(runFile, "rh"))
	sort.Strings(lines)
	golden(t, "repo-health.events.golden", lines)
}

// TestBadInput tries what a new user gets wrong; each gets one clear
// message, exit 2, and no run directory.
func TestBadInput(t *testing.T) {
	const base = `
plugin "mock" {
  type = "engine"
  path = "BIN/mock-engine"
  PIN
}
lane "w" {
  requested = { adapter = "mock", provider = "local", model_family = "scripted", model = "m1", tools = [] }
}
graph "dag" {
  node "a" {
    lane   = "w"
    prompt = "hi"
  }
  EXTRA
}
`
	tests := []struct {
		name    string
		pin     string
		extra   string
		edit    func(string) string
		lock    bool
		message []string
	}{
		{name: "missing plugin binary", edit: func(s string) string { return strings.Replace(s, "BIN/mock-engine", "BIN/no-such-engine", 1) },
			message: []string{"no-such-engine", "does not exist"}},
		{name: "wrong digest", pin: `sha256 = "` + strings.Repeat("ab", 32) + `"`,
			message: []string{"mock-engine", strings.Repeat("ab", 32), "plugin lock --upgrade"}},
		{name: "unpinned", message: []string{"not pinned", "obversa plugin lock"}},
		{name: "missing workspace root", lock: true, edit: func(s string) string { return "workspace {\n  root = \"nope\"\n}\n" + s },
			message: []string{"run.hcl:2:10: error: Workspace root does not exist"}},
		{name: "cycle", lock: true, extra: "node \"b\" {\n lane = \"w\"\n prompt = \"x\"\n depends_on = [\"c\"]\n}\nnode \"c\" {\n lane = \"w\"\n prompt = \"x\"\n depends_on = [\"b\"]\n}",
			message: []string{"run.hcl:", "cycle"}},
		{name: "unknown lane", lock: true, extra: "node \"b\" {\n lane = \"nope\"\n prompt = \"x\"\n}", message: []string{"run.hcl:", "nope"}},
		{name: "typo'd attribute", lock: true, extra: "node \"b\" {\n lane = \"w\"\n promt = \"x\"\n}", message: []string{"run.hcl:", "promt"}},
		{name: "stdout before handshake", lock: true, edit: func(s string) string {
			return strings.Replace(s, `path = "BIN/mock-engine"`, `path = "SELF"`+"\n  env = { OBVERSA_TEST_HELPER = \"stdout-noise\" }", 1)
		}, message: []string{"mock", "hello from a plugin that forgot its handshake"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			text := strings.Replace(strings.Replace(base, "PIN", tt.pin, 1), "EXTRA", tt.extra, 1)
			if tt.edit != nil {
				text = tt.edit(text)
			}
			runFile := writeRunFile(t, text)
			dir := filepath.Dir(runFile)
			if tt.lock {
				// Pin what can be pinned so the intended mistake is the one reported.
				obversa(t, dir, "plugin", "lock", runFile)
			}
			r := obversa(t, dir, "run", runFile)
			if r.code != exitUsage {
				t.Fatalf("exit %d, want %d; stderr:\n%s", r.code, exitUsage, r.stderr)
			}
			for _, m := range tt.message {
				if !strings.Contains(r.stderr, m) {
					t.Errorf("stderr lacks %q:\n%s", m, r.stderr)
				}
			}
			if _, err := os.Stat(filepath.Join(dir, ".obversa", "default", "runs")); !os.IsNotExist(err) {
				t.Errorf("a run directory was created (stat: %v)", err)
			}
		})
	}
}
