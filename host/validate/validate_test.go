package validate

import (
	"strings"
	"testing"

	hclv2 "github.com/hashicorp/hcl/v2"

	"github.com/obversa/obversa/hcl"
	"github.com/obversa/obversa/plugin"
)

// TestConfigDiagnostics places a plugin's Configure diagnostics: at the
// key its attribute path names, else at the config value; warnings stay
// warnings; the detail names the plugin and the attribute.
func TestConfigDiagnostics(t *testing.T) {
	t.Parallel()
	src := `plugin "shell" {
  type   = "node"
  path   = "/bin/sh"
  config = {
    limits = { memory = "lots" }
  }
}
graph "dag" {
  node "a" {
    binding = "shell"
  }
}
`
	rf, diags := hcl.Decode([]byte(src), "/proj/run.hcl")
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	got := ConfigDiagnostics(rf.Plugin("shell"), []plugin.Diagnostic{
		{Severity: plugin.SeverityWarning, Summary: "memory is a guess", Attribute: "limits.memory", Detail: "Write bytes."},
		{Severity: plugin.SeverityError, Summary: "config is incomplete"},
		{Severity: plugin.SeverityError, Summary: "command is required", Attribute: "command"},
	})
	want := []struct {
		sev             hclv2.DiagnosticSeverity
		line, col       int
		detailFragments []string
	}{
		{hclv2.DiagWarning, 5, 16, []string{`Plugin "shell"`, "config.limits.memory", "Write bytes."}},
		{hclv2.DiagError, 4, 12, []string{"its config"}},
		{hclv2.DiagError, 4, 12, []string{"config.command"}},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d diagnostics: %v", len(got), got)
	}
	for i, w := range want {
		d := got[i]
		if d.Severity != w.sev || d.Subject == nil || d.Subject.Start.Line != w.line || d.Subject.Start.Column != w.col {
			t.Errorf("diagnostic %d: severity %v at %v, want %v at %d:%d", i, d.Severity, d.Subject, w.sev, w.line, w.col)
		}
		for _, f := range w.detailFragments {
			if !strings.Contains(d.Detail, f) {
				t.Errorf("diagnostic %d: detail %q lacks %q", i, d.Detail, f)
			}
		}
	}
}
