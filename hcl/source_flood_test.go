package hcl

import (
	"bytes"
	"strings"
	"testing"
)

// TestNotARunFileFloods: a file that is not HCL at all — CR-only line
// endings make a whole file one line, a binary has bytes HCL never uses —
// gets at most MaxParseDiagnostics parser errors and one counting the
// rest, and the written diagnostics quote no line whole: before, each of
// one error per byte quoted the whole line (2 GB for a 172 KB file).
func TestNotARunFileFloods(t *testing.T) {
	t.Parallel()
	line := "graph \"dag\" {\r  node \"a\" {\r    lane = \"w\"\r    prompt = \"p\"\r  }\r}\r"
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
	if got := cutLongLines([]byte("a\nbb\n")); string(got) != "a\nbb\n" {
		t.Errorf("cutLongLines changed short lines: %q", got)
	}
	if got := cutLongLines([]byte(strings.Repeat("é", 400) + "\nx")); !bytes.HasSuffix(got, []byte("…\nx")) || len(got) > maxShownLineBytes+10 {
		t.Errorf("cutLongLines of a long multibyte line: %d bytes, %q…", len(got), got[len(got)-8:])
	}
}
