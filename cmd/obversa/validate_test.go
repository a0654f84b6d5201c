package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWorkspaceRootOutside: a workspace root outside the run file's
// directory is a warning from validate and run, with its place, unless
// allow_outside = true; the run still runs.
func TestWorkspaceRootOutside(t *testing.T) {
	t.Parallel()
	const warning = "warning: Workspace root is outside the run file's directory"
	for _, allow := range []bool{false, true} {
		block := "workspace {\n  root = \"..\"\n}\n"
		if allow {
			block = "workspace {\n  root = \"..\"\n  allow_outside = true\n}\n"
		}
		runFile := writeRunFile(t, block+jsonRunFile)
		dir := filepath.Dir(runFile)
		v := obversa(t, dir, "validate", runFile)
		r, res := runJSON(t, runFile, "--run-id", "w")
		if v.code != 0 || r.code != 0 || res["kind"] != "complete" {
			t.Fatalf("allow_outside %v: validate exit %d, run exit %d %v:\n%s%s", allow, v.code, r.code, res, v.stderr, r.stderr)
		}
		for name, stderr := range map[string]string{"validate": v.stderr, "run": r.stderr} {
			if got := strings.Contains(stderr, runFile+":2:10: "+warning); got == allow {
				t.Errorf("allow_outside %v: %s warned %v:\n%s", allow, name, got, stderr)
			}
		}
		if allow {
			continue
		}
		vj := oneObject(t, obversa(t, dir, "validate", "--json", runFile))
		if ds, _ := vj["diagnostics"].([]any); len(ds) != 1 || ds[0].(map[string]any)["severity"] != "warning" {
			t.Errorf("validate --json: %v", vj)
		}
	}
}

// TestWorkspaceRootMissing: validate refuses a workspace root that does
// not exist, at its place, before anything runs.
func TestWorkspaceRootMissing(t *testing.T) {
	t.Parallel()
	runFile := writeRunFile(t, "workspace {\n  root = \"gone\"\n}\n"+jsonRunFile)
	wantStderr(t, obversa(t, filepath.Dir(runFile), "validate", runFile), exitUsage, runFile+":2:10: error: Workspace root does not exist")
	if err := os.Mkdir(filepath.Join(filepath.Dir(runFile), "gone"), 0o755); err != nil {
		t.Fatal(err)
	}
	if r := obversa(t, filepath.Dir(runFile), "validate", runFile); r.code != 0 {
		t.Fatalf("validate after creating the root: exit %d: %s", r.code, r.stderr)
	}
}
