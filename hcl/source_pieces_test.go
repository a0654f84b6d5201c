package hcl

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	hclv2 "github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// piecesGraph returns a run file whose graph holds n nodes, shaped by
// variant: comments and blank lines between the nodes, a heredoc prompt
// over several lines, a template with an interpolation, CRLF line ends.
func piecesGraph(n int, variant string) string {
	var s strings.Builder
	s.WriteString("# a run file\nlane \"w\" {\n  requested = { adapter = \"mock\" }\n}\ngraph \"dag\" {\n")
	if variant == "blank" {
		s.WriteString("\n\n  # the nodes\n")
	}
	s.WriteString("  global_concurrency = 32\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&s, "  node \"n%d\" {\n    lane = \"w\"\n", i)
		switch variant {
		case "heredoc":
			fmt.Fprintf(&s, "    prompt = <<-EOT\n      line one of %d\n      ${input.x}\n    EOT\n", i)
		case "template":
			fmt.Fprintf(&s, "    prompt = \"p%d %%{ if true }${upper(\"x\")}%%{ endif } ${\n      lower(\"Y\")\n    }\"\n", i)
		default:
			fmt.Fprintf(&s, "    prompt = \"p%d\"\n", i)
		}
		if i > 0 {
			fmt.Fprintf(&s, "    depends_on = [\"n%d\"]\n", (i-1)/4)
		}
		s.WriteString("  }\n")
		if variant == "blank" && i%3 == 0 {
			s.WriteString("\n  // between nodes\n\n")
		}
	}
	s.WriteString("}\n")
	out := s.String()
	if variant == "crlf" {
		out = strings.ReplaceAll(out, "\n", "\r\n")
	}
	return out
}

// matchWhole checks the windowed lex and the parse in pieces of src
// against a lex and a parse of the whole: the same tokens, the same check
// diagnostics and, where parsePieces answers, the same body. It reports
// whether the pieces were parsed.
func matchWhole(t testing.TB, src []byte, window, minBody, piece int) bool {
	const name = "run.hcl"
	whole, _ := hclsyntax.LexConfig(src, name, hclv2.InitialPos)
	var windowed hclsyntax.Tokens
	lexWindows(src, name, window, func(toks hclsyntax.Tokens) { windowed = append(windowed, toks...) })
	if !reflect.DeepEqual(windowed, whole) {
		t.Fatalf("window %d: the windowed lex differs from the whole lex of %q", window, src)
	}
	regions, diags := scanSource(src, name, window, minBody)
	want := checkLineEnds(whole, name)
	if !want.HasErrors() {
		want = checkNesting(whole)
	}
	if !reflect.DeepEqual(diags, want) {
		t.Fatalf("check diagnostics %v, the whole file's %v", diags, want)
	}
	if diags.HasErrors() {
		return false
	}
	file, ok := parsePieces(src, name, regions, piece)
	if !ok {
		return false
	}
	ref, refDiags := hclsyntax.ParseConfig(src, name, hclv2.InitialPos)
	if len(refDiags) > 0 {
		t.Fatalf("parsed in pieces, but the whole file has diagnostics: %v", refDiags)
	}
	if !reflect.DeepEqual(file.Body, ref.Body) || string(file.Bytes) != string(src) {
		t.Fatalf("the body parsed in pieces differs from the whole file's (%q)", src)
	}
	nav, refNav := file.Nav.(interface{ ContextString(int) string }), ref.Nav.(interface{ ContextString(int) string })
	for off := 0; off < len(src); off += 1 + len(src)/50 {
		if got, want := nav.ContextString(off), refNav.ContextString(off); got != want {
			t.Fatalf("context at byte %d: %q, the whole file's %q", off, got, want)
		}
	}
	return true
}

// TestParsePiecesMatchesWhole parses generated graphs and the examples'
// run files in pieces, with windows and pieces small enough that every
// body is cut, and expects what a parse of the whole gives.
func TestParsePiecesMatchesWhole(t *testing.T) {
	for _, variant := range []string{"plain", "blank", "heredoc", "template", "crlf"} {
		src := []byte(piecesGraph(40, variant))
		for _, sizes := range [][3]int{{16, 0, 1}, {200, 100, 300}, {lexWindowBytes, 0, pieceBytes}} {
			if !matchWhole(t, src, sizes[0], sizes[1], sizes[2]) {
				t.Errorf("%s, sizes %v: not parsed in pieces", variant, sizes)
			}
		}
	}
	files, _ := filepath.Glob("../examples/*/*.hcl")
	more, _ := filepath.Glob("testdata/*/*.hcl")
	for _, f := range append(files, more...) {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		matchWhole(t, src, 16, 0, 1)
	}
}

// TestParsePiecesDeclines expects the whole file's parse — and its
// diagnostics — where the pieces cannot stand for it: an argument set
// twice in different pieces, a syntax error in a piece.
func TestParsePiecesDeclines(t *testing.T) {
	twice := "graph \"g\" {\n  a = 1\n  node \"x\" {\n  }\n  a = 2\n}\n"
	broken := "graph \"g\" {\n  node \"x\" {\n    lane = \n  }\n}\n"
	for _, src := range []string{twice, broken} {
		if matchWhole(t, []byte(src), 16, 0, 1) {
			t.Errorf("%q: parsed in pieces", src)
		}
	}
	_, diags := parseConfig([]byte(twice), "run.hcl")
	if !diags.HasErrors() || !strings.Contains(diags.Error(), "Attribute redefined") {
		t.Errorf("an argument set twice: %v", diags)
	}
}

// FuzzParsePieces requires, of any source, that the windowed lex gives the
// whole lex's tokens and check diagnostics and that a parse in pieces,
// where it is done, gives the whole parse's body.
func FuzzParsePieces(f *testing.F) {
	for _, v := range []string{"plain", "blank", "heredoc", "template", "crlf"} {
		f.Add([]byte(piecesGraph(3, v)), uint8(16))
	}
	f.Add([]byte("graph \"g\" {\n  x = \"a\n  b\"\n}\n"), uint8(4))
	f.Add([]byte("graph \"g\" {\n  x = <<EOT\n}\nEOT\n}\n"), uint8(8))
	f.Add([]byte("a {\n  b = 1\n}\n\xef\xbb\xbfc = 2\n"), uint8(8))
	f.Fuzz(func(t *testing.T, src []byte, window uint8) {
		if checkText(src, "run.hcl").HasErrors() {
			return
		}
		matchWhole(t, src, 1+int(window), 0, 1+int(window)*4)
	})
}
