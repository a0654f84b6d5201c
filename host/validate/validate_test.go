package validate

import (
	"strings"
	"testing"
	"unicode/utf8"

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

// TestConfigDiagnosticsCapped: of a plugin's diagnostics the first
// MaxPluginDiagnostics are placed, each summary and detail cut to
// MaxDiagnosticBytes at a rune boundary, then one counting the rest — an
// error when any left out is one, a warning when all are warnings.
func TestConfigDiagnosticsCapped(t *testing.T) {
	t.Parallel()
	pl := &hcl.Plugin{Name: "p"}
	long := strings.Repeat("é", MaxDiagnosticBytes) // two bytes a rune
	for _, tc := range []struct {
		name     string
		n        int
		lastSev  plugin.Severity
		wantLen  int
		wantLast hclv2.DiagnosticSeverity
	}{
		{"at the cap", MaxPluginDiagnostics, plugin.SeverityError, MaxPluginDiagnostics, hclv2.DiagWarning},
		{"warnings over", MaxPluginDiagnostics + 5, plugin.SeverityWarning, MaxPluginDiagnostics + 1, hclv2.DiagWarning},
		{"an error over", MaxPluginDiagnostics + 5, plugin.SeverityError, MaxPluginDiagnostics + 1, hclv2.DiagError},
	} {
		ds := make([]plugin.Diagnostic, tc.n)
		for i := range ds {
			ds[i] = plugin.Diagnostic{Severity: plugin.SeverityWarning, Summary: long, Detail: long}
		}
		ds[len(ds)-1].Severity = tc.lastSev
		got := ConfigDiagnostics(pl, ds)
		if len(got) != tc.wantLen {
			t.Fatalf("%s: %d diagnostics, want %d", tc.name, len(got), tc.wantLen)
		}
		for _, d := range got[:min(len(got), MaxPluginDiagnostics)] {
			if len(d.Summary) > MaxDiagnosticBytes+32 || len(d.Detail) > MaxDiagnosticBytes+128 ||
				!strings.HasSuffix(d.Summary, "… (4096 more bytes)") || !utf8.ValidString(d.Summary) {
				t.Fatalf("%s: summary of %d bytes, detail of %d bytes, want each cut at %d bytes on a rune boundary: %.40q",
					tc.name, len(d.Summary), len(d.Detail), MaxDiagnosticBytes, d.Summary[len(d.Summary)-40:])
			}
		}
		last := got[len(got)-1]
		if len(got) > MaxPluginDiagnostics {
			if n, _ := last.Extra.(hcl.Omitted); int(n) != tc.n-MaxPluginDiagnostics || last.Severity != tc.wantLast ||
				!strings.Contains(last.Summary, `and 5 more diagnostics from plugin "p"`) {
				t.Errorf("%s: last diagnostic %v %q (omitted %v), want severity %v counting 5", tc.name, last.Severity, last.Summary, last.Extra, tc.wantLast)
			}
		} else if _, ok := last.Extra.(hcl.Omitted); ok {
			t.Errorf("%s: an omitted count with nothing left out", tc.name)
		}
	}
}
