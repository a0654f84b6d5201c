package hcl

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	hclv2 "github.com/hashicorp/hcl/v2"
)

// TestWriteDiagnosticsOnce: each diagnostic's summary is printed exactly
// once, on its first line, with or without a source range.
func TestWriteDiagnosticsOnce(t *testing.T) {
	t.Parallel()
	src := []byte("graph \"dag\" {\n  node \"a\" {\n    lane   = \"writr\"\n    prompt = \"hi\"\n  }\n}\n")
	_, diags := Decode(src, "run.hcl")
	diags = append(diags, &hclv2.Diagnostic{Severity: hclv2.DiagWarning, Summary: "No range here", Detail: "A detail."})
	var b strings.Builder
	if err := WriteDiagnostics(&b, diags, map[string][]byte{"run.hcl": src}, 0); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, dg := range diags {
		if n := strings.Count(out, dg.Summary); n != 1 {
			t.Errorf("summary %q printed %d times:\n%s", dg.Summary, n, out)
		}
	}
	for _, want := range []string{"run.hcl:3:14: error: Unknown lane \"writr\"\n", "\nwarning: No range here\n\nA detail.\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestDiagnosticsJSON(t *testing.T) {
	t.Parallel()
	src := []byte("graph \"dag\" {\n  node \"a\" {\n    lane   = \"writr\"\n    prompt = \"hi\"\n  }\n}\n")
	_, diags := Decode(src, "run.hcl")
	diags = append(diags, &hclv2.Diagnostic{Severity: hclv2.DiagWarning, Summary: "No range here"})
	b, err := json.Marshal(DiagnosticsJSON(diags))
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"severity":"error","summary":"Unknown lane \"writr\"","detail":"Node \"a\" uses lane \"writr\", but no lane \"writr\" { … } block declares it. Declare the lane or use a declared one.",` +
		`"range":{"filename":"run.hcl","start":{"line":3,"column":14,"byte":40},"end":{"line":3,"column":21,"byte":47}}},` +
		`{"severity":"warning","summary":"No range here"}]`
	if diff := cmp.Diff(want, string(b)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if b, _ := json.Marshal(DiagnosticsJSON(nil)); string(b) != "[]" {
		t.Errorf("no diagnostics encode as %s, want []", b)
	}
}
