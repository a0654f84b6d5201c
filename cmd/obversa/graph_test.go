package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestGraphCommand draws the quickstart's run file in both formats; the
// DOT form is laid out by Graphviz when it is installed.
func TestGraphCommand(t *testing.T) {
	t.Parallel()
	runFile := filepath.Join(repoRoot, "examples", "quickstart", "run.hcl")
	for _, f := range []string{"mermaid", "dot"} {
		r := obversa(t, t.TempDir(), "graph", "--format", f, runFile)
		if r.code != 0 {
			t.Fatalf("graph --format %s: exit %d: %s", f, r.code, r.stderr)
		}
		golden(t, "quickstart.graph."+f, strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n"))
		if f == "dot" {
			if dot, err := exec.LookPath("dot"); err == nil {
				cmd := exec.Command(dot, "-Tsvg")
				cmd.Stdin = strings.NewReader(r.stdout)
				if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "<svg") {
					t.Errorf("dot -Tsvg: %v\n%.500s", err, out)
				}
			}
		}
	}
	wantStderr(t, obversa(t, t.TempDir(), "graph", "--format", "svg", runFile), exitUsage, `unknown diagram format "svg"`)
	bad := writeRunFile(t, strings.Replace(jsonRunFile, `lane   = "w"`, `lane   = "ww"`, 1))
	wantStderr(t, obversa(t, t.TempDir(), "graph", bad), exitUsage, bad+":11:14: error: Unknown lane")
}
