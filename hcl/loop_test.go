package hcl

import (
	"encoding/json"
	"errors"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestDecodeLoopAndForEach(t *testing.T) {
	// A review loop, a static and a dynamic for_each (docs/run-file.md).
	src, err := os.ReadFile("testdata/good/loops.hcl")
	if err != nil {
		t.Fatal(err)
	}
	rf, diags := Decode(src, "/proj/run.hcl")
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	ignore := cmpopts.IgnoreFields(Node{}, "Range", "Input", "Prompt")
	want := []Node{
		{ID: "plan", Kind: "required", Binding: "shell"},
		{ID: "config", Kind: "required", DependsOn: []string{"plan"}, Loop: &Loop{MaxRounds: 4, Review: "check",
			Until: "${length(input.results.author) > 0}", Members: []Node{
				{ID: "author", Kind: "required", Lane: "writer"},
				{ID: "check", Kind: "required", Binding: "shell", DependsOn: []string{"author"}, RetrySafe: true},
			}}},
		{ID: "ship", Kind: "required", Binding: "shell", DependsOn: []string{"config"}},
		{ID: "lint", Kind: "required", Binding: "shell", ForEach: &ForEach{MaxItems: 1000, Items: []ForEachItem{
			{Key: "a.go", Value: json.RawMessage(`"a.go"`)}, {Key: "b/c.go", Value: json.RawMessage(`"b/c.go"`)}}}},
		{ID: "each-file", Kind: "required", Lane: "writer", DependsOn: []string{"plan"}, ForEach: &ForEach{MaxItems: 500,
			Source: "${jsondecode(input.results.plan.stdout).files}"}},
	}
	if diff := cmp.Diff(want, rf.Graph.Nodes, ignore); diff != "" {
		t.Fatalf("nodes (-want +got):\n%s", diff)
	}
	// The stored templates render with the loop's and the item's
	// variables.
	author := rf.Graph.Nodes[1].Loop.Members[0]
	for _, tt := range []struct {
		loop LoopVars
		want string
	}{
		{LoopVars{Round: 1, Previous: map[string]json.RawMessage{"author": nil, "check": nil}}, "Write the config."},
		{LoopVars{Round: 2, Findings: "check: no timeout"}, "Write the config. Fix: check: no timeout"},
	} {
		got, err := Scope{Loop: &tt.loop}.Prompt(author.Prompt)
		if err != nil || got != tt.want {
			t.Errorf("round %d prompt = %q, %v; want %q", tt.loop.Round, got, err, tt.want)
		}
	}
	met, err := Scope{Results: map[string]json.RawMessage{"author": json.RawMessage(`"timeout = 5s"`)}, Loop: &LoopVars{Round: 1}}.Condition(rf.Graph.Nodes[1].Loop.Until)
	if err != nil || !met {
		t.Errorf("until = %v, %v", met, err)
	}
	in, err := Scope{Each: &EachVars{Key: "b/c.go", Value: json.RawMessage(`"b/c.go"`)}}.Input(rf.Graph.Nodes[3].Input)
	if err != nil || string(in) != `{"command":["vet","b/c.go"]}` {
		t.Errorf("instance input = %s, %v", in, err)
	}
	items, err := Scope{Results: map[string]json.RawMessage{"plan": json.RawMessage(`{"stdout":"{\"files\":[\"x\",\"y\"]}"}`)}}.Items(rf.Graph.Nodes[4].ForEach.Source)
	if err != nil || len(items) != 2 || items[1].Key != "y" {
		t.Errorf("items = %+v, %v", items, err)
	}
}

func TestScope(t *testing.T) {
	prev := map[string]json.RawMessage{"author": json.RawMessage(`"draft 1"`), "check": nil}
	sc := Scope{Results: map[string]json.RawMessage{"plan": json.RawMessage(`{"files":["a","b"],"map":{"z":1,"a":{"x":true}},"n":3}`)},
		Loop: &LoopVars{Round: 2, Findings: "f", Previous: prev}}
	prompts := []struct{ src, want string }{
		{"${loop.round}/${loop.findings}/${loop.previous.author}", "2/f/draft 1"},
		{"${length(input.results.plan)} ${length(input.results.plan.map)} ${length(input.results.plan.files)} ${length(loop.findings)}", "3 2 2 1"},
		{`${loop.previous.check == null ? "none" : "some"}`, "none"},
	}
	for _, p := range prompts {
		if got, err := sc.Prompt(p.src); err != nil || got != p.want {
			t.Errorf("Prompt(%q) = %q, %v; want %q", p.src, got, err, p.want)
		}
	}
	conds := []struct {
		src  string
		want bool
		err  error
	}{
		{"${loop.round > 1}", true, nil},
		{`${"false"}`, false, nil},
		{"${loop.round}", false, ErrTemplate},
		{"${input.results.nope}", false, ErrMissingResult},
	}
	for _, c := range conds {
		got, err := sc.Condition(c.src)
		if got != c.want || !errors.Is(err, c.err) && !(c.err == nil && err == nil) {
			t.Errorf("Condition(%q) = %v, %v; want %v, %v", c.src, got, err, c.want, c.err)
		}
	}
	items := []struct {
		src  string
		keys []string
		err  error
	}{
		{"${input.results.plan.files}", []string{"a", "b"}, nil},
		{"${input.results.plan.map}", []string{"a", "z"}, nil},
		{`${["x", "x"]}`, nil, ErrForEachItems},
		{`${["x", 1]}`, nil, ErrForEachItems},
		{"${input.results.plan.n}", nil, ErrForEachItems},
		{"${input.results.plan.missing}", nil, ErrMissingAttribute},
	}
	for _, c := range items {
		got, err := sc.Items(c.src)
		var keys []string
		for _, it := range got {
			keys = append(keys, it.Key)
		}
		if !cmp.Equal(keys, c.keys) || !errors.Is(err, c.err) && !(c.err == nil && err == nil) {
			t.Errorf("Items(%q) = %v, %v; want %v, %v", c.src, keys, err, c.keys, c.err)
		}
	}
	got, _ := sc.Items("${input.results.plan.map}")
	if string(got[0].Value) != `{"x":true}` {
		t.Errorf("an object's item value = %s", got[0].Value)
	}
}
