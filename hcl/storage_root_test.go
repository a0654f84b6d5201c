package hcl

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	hclv2 "github.com/hashicorp/hcl/v2"
)

// TestStorageHoldingTheWorkspace: a storage directory that is the
// workspace root, or holds it, is warned about at storage.directory
// (plugins would find the whole workspace read-only); one inside the
// workspace, or a database, is not.
func TestStorageHoldingTheWorkspace(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, storage, want string
	}{
		{"the root itself", `directory = "."`, "is the workspace root"},
		{"above the root", `directory = ".."`, "holds the workspace root"},
		{"inside the root", `directory = ".obversa"`, ""},
		{"beside the root", `directory = "../runs"`, ""},
		{"a database", `url = "postgres://obversa@db.internal/obversa"`, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "proj")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			src := "workspace {\n  root = \".\"\n  provider = \"none\"\n}\nstorage {\n  " + tt.storage + "\n}\n" + prelude +
				"graph \"dag\" {\n  node \"a\" {\n    lane = \"writer\"\n    prompt = \"p\"\n  }\n}\n"
			path := filepath.Join(dir, "run.hcl")
			if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
			_, diags := DecodeFile(path)
			var got *hclv2.Diagnostic
			for _, d := range diags {
				if d.Summary == "Storage directory holds the workspace" {
					got = d
				}
			}
			switch {
			case tt.want == "" && got != nil:
				t.Errorf("warned: %s", got.Detail)
			case tt.want != "" && got == nil:
				t.Errorf("no warning; diagnostics %v", diags)
			case got != nil && (got.Severity != hclv2.DiagWarning || !strings.Contains(got.Detail, tt.want) || got.Subject == nil || got.Subject.Start.Line != 6):
				t.Errorf("%v at %v: %s, want a warning at storage.directory (line 6) saying it %s", got.Severity, got.Subject, got.Detail, tt.want)
			}
		})
	}
}
