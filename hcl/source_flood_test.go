package hcl

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"

	hclv2 "github.com/hashicorp/hcl/v2"
)

// TestNotARunFileFloods: a file that is not HCL at all — a binary has
// bytes HCL never uses, here between lines with no line feed, so the
// whole file is one line (CR-only line endings did that too; they now get
// one diagnostic of their own, TestCROnlyLineEndings) — gets at most MaxParseDiagnostics parser errors and one counting the
// rest, and the written diagnostics quote no line whole: before, each of
// one error per byte quoted the whole line (2 GB for a 172 KB file).
func TestNotARunFileFloods(t *testing.T) {
	t.Parallel()
	line := "graph \"dag\" {\x01  node \"a\" {\x01    lane = \"w\"\x01    prompt = \"p\"\x01  }\x01}\x01"
	src := []byte(strings.Repeat(line, 200))
	_, diags := Decode(src, "cr.hcl")
	if len(diags) != MaxParseDiagnostics+1 {
		t.Fatalf("%d diagnostics, want %d", len(diags), MaxParseDiagnostics+1)
	}
	last := diags[len(diags)-1]
	if n, ok := last.Extra.(Omitted); !ok || int(n) <= 0 || !strings.Contains(last.Summary, "more errors in cr.hcl") {
		t.Errorf("last diagnostic %+v; want one counting the rest", last)
	}
	var b bytes.Buffer
	if err := WriteDiagnostics(&b, diags, map[string][]byte{"cr.hcl": src}, 0); err != nil {
		t.Fatal(err)
	}
	if b.Len() > 100*(maxShownLineBytes+300) {
		t.Errorf("wrote %d bytes for %d diagnostics on one %d-byte line", b.Len(), len(diags), len(src))
	}
	if !strings.Contains(b.String(), "…") {
		t.Error("the long line is not marked cut")
	}
	// A file of ordinary lines is shown as it is.
	if got, _ := cutLongLines([]byte("a\nbb\n")); string(got) != "a\nbb\n" {
		t.Errorf("cutLongLines changed short lines: %q", got)
	}
	if got, _ := cutLongLines([]byte(strings.Repeat("é", 400) + "\nx")); !bytes.HasSuffix(got, []byte("…\nx")) || len(got) > maxShownLineBytes+10 {
		t.Errorf("cutLongLines of a long multibyte line: %d bytes, %q…", len(got), got[len(got)-8:])
	}
}

// TestCutLineKeepsLaterSnippets: a diagnostic below a line that
// WriteDiagnostics cuts still shows its own line, and one whose place is
// in the cut part of a line highlights the cut mark: the snippet is found
// by byte offsets, which the cut moves.
func TestCutLineKeepsLaterSnippets(t *testing.T) {
	t.Parallel()
	long := "# " + strings.Repeat("x", 2000)
	src := []byte(long + "\ngraph \"dag\" {\n  node \"n\" {\n    bogus = 1\n  }\n}\n" + long + "é" + long + "\n")
	after := bytes.Index(src, []byte("bogus"))
	inCut := len(long) + 1 + len("graph \"dag\" {\n  node \"n\" {\n    bogus = 1\n  }\n}\n") + 1500
	diags := hclv2.Diagnostics{
		{Severity: hclv2.DiagError, Summary: "below", Subject: &hclv2.Range{Filename: "f.hcl",
			Start: hclv2.Pos{Line: 4, Column: 5, Byte: after}, End: hclv2.Pos{Line: 4, Column: 10, Byte: after + 5}}},
		{Severity: hclv2.DiagError, Summary: "in the cut", Subject: &hclv2.Range{Filename: "f.hcl",
			Start: hclv2.Pos{Line: 7, Column: 1501, Byte: inCut}, End: hclv2.Pos{Line: 7, Column: 1502, Byte: inCut + 1}}},
	}
	var b bytes.Buffer
	if err := WriteDiagnostics(&b, diags, map[string][]byte{"f.hcl": src}, 0); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if !strings.Contains(out, "   4:     bogus = 1") {
		t.Errorf("the diagnostic below the cut line lost its snippet:\n%s", out)
	}
	if !strings.Contains(out, "   7: # xxx") || !utf8.ValidString(out) {
		t.Errorf("the diagnostic in the cut part of a line: want its line, cut, in valid UTF-8:\n%s", out)
	}
}
