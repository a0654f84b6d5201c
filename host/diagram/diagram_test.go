package diagram

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/obversa/obversa/host/graph"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// requireGraphviz makes a missing `dot` a failure instead of a skip; CI
// sets it after installing graphviz.
const requireGraphviz = "OBVERSA_REQUIRE_GRAPHVIZ"

// quickstart is the definition of examples/quickstart plus an optional
// node and an approval, so every kind of box is drawn.
func quickstart() *graph.Definition {
	return &graph.Definition{Name: "dag", GlobalConcurrency: 2, Nodes: []graph.NodeDef{
		{ID: "draft", Kind: graph.KindRequired, Lane: "writer", Approval: true, DependsOn: []string{}},
		{ID: "count", Kind: graph.KindRequired, Binding: "shell", DependsOn: []string{"draft"}},
		{ID: "lint.v2", Kind: graph.KindOptional, Binding: "shell", DependsOn: []string{"draft"}},
		{ID: "end", Kind: graph.KindRequired, Binding: "shell", DependsOn: []string{"count", "lint.v2"}},
		{ID: "report", Kind: graph.KindFinalizer, Lane: "writer", DependsOn: []string{}},
	}}
}

// looped is a diagram with nested groups, the shape loops and for_each
// instances take: a loop "review" holding a round, itself holding two
// members, beside a top-level node.
func looped() *Diagram {
	return &Diagram{Name: "dag",
		Nodes: []Node{
			{ID: "plan", Kind: graph.KindRequired, Lane: "writer", Status: "passed"},
			{ID: "draft", Kind: graph.KindRequired, Lane: "writer", Group: "review/1", Status: "passed"},
			{ID: "critique", Kind: graph.KindRequired, Lane: "reviewer", Group: "review/1", Status: "started"},
		},
		Edges:  []Edge{{From: "plan", To: "draft"}, {From: "draft", To: "critique"}},
		Groups: []Group{{ID: "review", Label: "loop review"}, {ID: "review/1", Label: "round 1", Parent: "review"}},
	}
}

func TestGolden(t *testing.T) {
	t.Parallel()
	statuses := map[string]graph.Status{"draft": graph.StatusPassed, "count": graph.StatusFailed,
		"lint.v2": graph.StatusStarted, "report": graph.StatusPaused}
	withBlocked := New(quickstart(), statuses)
	withBlocked.Nodes[3].Status = StatusBlocked
	diagrams := map[string]*Diagram{
		"definition": New(quickstart(), nil),
		"states":     withBlocked,
		"groups":     looped(),
	}
	for name, d := range diagrams {
		for _, f := range []Format{FormatMermaid, FormatDOT} {
			t.Run(name+"."+string(f), func(t *testing.T) {
				t.Parallel()
				var b bytes.Buffer
				if err := d.Write(&b, f); err != nil {
					t.Fatal(err)
				}
				path := filepath.Join("testdata", name+"."+string(f))
				compareGolden(t, path, b.Bytes())
				if f == FormatDOT {
					checkDOT(t, path)
				}
			})
		}
	}
}

// compareGolden compares got with the golden file, or rewrites it under
// -update.
func compareGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s (-want +got):\n%s", path, diff)
	}
}

// checkDOT lays a DOT file out with Graphviz, which rejects bad syntax.
func checkDOT(t *testing.T, path string) {
	t.Helper()
	dot, err := exec.LookPath("dot")
	if err != nil {
		if os.Getenv(requireGraphviz) != "" {
			t.Fatalf("graphviz is required (%s is set): %v", requireGraphviz, err)
		}
		t.Skipf("graphviz is not installed: %v", err)
	}
	out, err := exec.Command(dot, "-Tsvg", "-o", os.DevNull, path).CombinedOutput()
	if err != nil || len(out) > 0 {
		t.Fatalf("dot -Tsvg %s: %v\n%s", path, err, out)
	}
}

func TestFormat(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"mermaid", "dot"} {
		if f, err := ParseFormat(s); err != nil || string(f) != s {
			t.Errorf("ParseFormat(%q) = %q, %v", s, f, err)
		}
	}
	if _, err := ParseFormat("svg"); !errors.Is(err, ErrFormat) {
		t.Errorf("ParseFormat(svg) error %v, want ErrFormat", err)
	}
	if err := New(quickstart(), nil).Write(&bytes.Buffer{}, "png"); !errors.Is(err, ErrFormat) {
		t.Errorf("Write(png) error %v, want ErrFormat", err)
	}
}

// TestLoopAndForEach draws a review loop between two nodes and a for_each
// node: the loop is a group holding its members, the edge into it goes to
// its entry member, the edge out of it leaves from its review member.
func TestLoopAndForEach(t *testing.T) {
	t.Parallel()
	def := &graph.Definition{Name: "dag", GlobalConcurrency: 2, Nodes: []graph.NodeDef{
		{ID: "plan", Kind: graph.KindRequired, Lane: "writer", DependsOn: []string{}},
		{ID: "config", Kind: graph.KindRequired, DependsOn: []string{"plan"}, Loop: &graph.LoopDef{MaxRounds: 4, Review: "check", Members: []graph.NodeDef{
			{ID: "author", Kind: graph.KindRequired, Lane: "writer", DependsOn: []string{}},
			{ID: "check", Kind: graph.KindRequired, Binding: "shell", DependsOn: []string{"author"}},
		}}},
		{ID: "ship", Kind: graph.KindRequired, Binding: "shell", DependsOn: []string{"config"}},
		{ID: "lint", Kind: graph.KindRequired, Binding: "shell", DependsOn: []string{"plan"}, ForEach: &graph.ForEachDef{MaxItems: 500, Source: "${input.results.plan}"}},
	}}
	d := New(def, map[string]graph.Status{"author": graph.StatusPassed, "check": graph.StatusStarted})
	want := []Edge{{From: "plan", To: "author"}, {From: "author", To: "check"}, {From: "check", To: "ship"}, {From: "plan", To: "lint"}}
	if diff := cmp.Diff(want, d.Edges); diff != "" {
		t.Fatalf("edges (-want +got):\n%s", diff)
	}
	for _, f := range []Format{FormatMermaid, FormatDOT} {
		var out bytes.Buffer
		if err := d.Write(&out, f); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join("testdata", "loop."+string(f))
		compareGolden(t, path, out.Bytes())
		if f == FormatDOT {
			checkDOT(t, path)
		}
	}
}

// TestStatusSlot: with a status slot, the Mermaid source is the same
// whatever state the nodes are in: no status in a label, no colour, and
// each label's last line the slot.
func TestStatusSlot(t *testing.T) {
	t.Parallel()
	draw := func(statuses map[string]graph.Status) string {
		d := New(quickstart(), statuses)
		d.StatusSlot = "…"
		var out bytes.Buffer
		if err := d.Write(&out, FormatMermaid); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	idle := draw(nil)
	if got := draw(map[string]graph.Status{"draft": graph.StatusPassed, "count": graph.StatusFailed}); got != idle {
		t.Errorf("the structure changed with the states:\n%s\nwas:\n%s", got, idle)
	}
	if strings.Contains(idle, "classDef") || strings.Contains(idle, "passed") {
		t.Errorf("the structure has states or colours:\n%s", idle)
	}
	if n := strings.Count(idle, `<br/>…"`); n != len(quickstart().Nodes) {
		t.Errorf("%d labels end with the slot, want %d:\n%s", n, len(quickstart().Nodes), idle)
	}
}

// TestBidiControlsEscaped: a label holding a bidirectional control (a
// for_each key "invoice\u202eexe.pdf") shows it as an escape in Mermaid
// and DOT, as the command line does, so it is not drawn reordered.
func TestBidiControlsEscaped(t *testing.T) {
	t.Parallel()
	d := &Diagram{Name: "dag",
		Nodes:  []Node{{ID: "lint", Kind: graph.KindRequired, Binding: "shell", Group: "g", ForEach: "for_each invoice\u202eexe.pdf", Status: "passed"}},
		Groups: []Group{{ID: "g", Label: "round \u2066a\u2069"}},
	}
	for _, f := range []Format{FormatMermaid, FormatDOT} {
		var out bytes.Buffer
		if err := d.Write(&out, f); err != nil {
			t.Fatal(err)
		}
		s := out.String()
		if strings.ContainsAny(s, "\u202e\u2066\u2069") || !strings.Contains(s, `invoice\u202eexe.pdf`) && !strings.Contains(s, `invoice\\u202eexe.pdf`) {
			t.Errorf("%v: a bidirectional control is drawn as it is:\n%q", f, s)
		}
	}
}
