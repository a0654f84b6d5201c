package hcl

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	hclv2 "github.com/hashicorp/hcl/v2"
)

// TestWorkspaceRoot decodes workspace roots on a real directory tree:
// project/ (the run file's directory) holding sub/, in-link → sub,
// out-link → ../elsewhere, a file; and project-link → project.
func TestWorkspaceRoot(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	project := filepath.Join(base, "project")
	for _, d := range []string{filepath.Join(project, "sub"), filepath.Join(base, "elsewhere")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(project, "notes.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	links := map[string]string{filepath.Join(project, "in-link"): "sub", filepath.Join(project, "out-link"): "../elsewhere",
		filepath.Join(base, "project-link"): "project"}
	for link, target := range links {
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
	}
	const outside = "Workspace root is outside the run file's directory"
	tests := []struct {
		name, dir, block string
		severity         hclv2.DiagnosticSeverity // 0: no diagnostic
		summary, detail  string
	}{
		{name: "inside", dir: project, block: `root = "sub"`},
		{name: "the run file's directory", dir: project, block: `root = "."`},
		{name: "symlink inside", dir: project, block: `root = "in-link"`},
		{name: "run file reached through a symlink", dir: filepath.Join(base, "project-link"), block: `root = "sub"`},
		{name: "parent", dir: project, block: `root = ".."`, severity: hclv2.DiagWarning, summary: outside, detail: `".."`},
		{name: "dot-dot through a subdirectory", dir: project, block: `root = "sub/../../elsewhere"`, severity: hclv2.DiagWarning, summary: outside,
			detail: `resolves to "` + filepath.Join(base, "elsewhere") + `"`},
		{name: "symlink outside", dir: project, block: `root = "out-link"`, severity: hclv2.DiagWarning, summary: outside,
			detail: `resolves to "` + filepath.Join(base, "elsewhere") + `"`},
		{name: "absolute outside", dir: project, block: `root = "/etc"`, severity: hclv2.DiagWarning, summary: outside, detail: "allow_outside = true"},
		{name: "outside allowed", dir: project, block: "root = \"out-link\"\n  allow_outside = true"},
		{name: "allowed before root", dir: project, block: "allow_outside = true\n  root = \"..\""},
		{name: "missing", dir: project, block: `root = "nope"`, severity: hclv2.DiagError, summary: "Workspace root does not exist"},
		{name: "missing even when outside is allowed", dir: project, block: "root = \"../nope\"\n  allow_outside = true", severity: hclv2.DiagError,
			summary: "Workspace root does not exist"},
		{name: "a file", dir: project, block: `root = "notes.txt"`, severity: hclv2.DiagError, summary: "Workspace root is not a directory"},
		{name: "allow_outside not a bool", dir: project, block: `allow_outside = "yes"`, severity: hclv2.DiagError, summary: "Incorrect attribute value type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			src := "workspace {\n  " + tt.block + "\n}\n" + prelude + minimalGraph
			path := filepath.Join(tt.dir, "run.hcl")
			_, diags := Decode([]byte(src), path)
			if tt.severity == 0 {
				if len(diags) > 0 {
					t.Fatalf("unexpected diagnostics:\n%s", diagsString(t, diags, path, src))
				}
				return
			}
			if len(diags) != 1 || diags[0].Severity != tt.severity || diags[0].Summary != tt.summary || !strings.Contains(diags[0].Detail, tt.detail) {
				t.Fatalf("want one %q mentioning %q, got:\n%s", tt.summary, tt.detail, diagsString(t, diags, path, src))
			}
			if r := diags[0].Subject; r == nil || r.Start.Line != 2 {
				t.Errorf("diagnostic at %v, want line 2", r)
			}
		})
	}
}
