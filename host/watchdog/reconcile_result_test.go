package watchdog

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/obversa/obversa/host/graph"
)

// TestNullResultUsedWhereRead: a null result recorded by --reconciled=done
// without --result is refused wherever a template reads it in a way null
// cannot satisfy — a for_each instance's result read by key, a loop
// member's read from outside its loop (input.results.<loop>.<member>) and
// by the loop's next round (loop.previous), a for_each source and an
// until condition — naming each reader; a unit no template reads that way
// is not refused.
func TestNullResultUsedWhereRead(t *testing.T) {
	t.Parallel()
	node := func(id string, deps ...string) graph.NodeDef {
		return graph.NodeDef{ID: id, Kind: graph.KindRequired, Binding: "shell", DependsOn: append([]string{}, deps...)}
	}
	w := node("w")
	fan := node("fan")
	fan.ForEach = &graph.ForEachDef{Items: []graph.ForEachItem{{Key: "a", Value: json.RawMessage(`"a"`)}, {Key: "b", Value: json.RawMessage(`"b"`)}}, MaxItems: 10}
	after := node("after", "fan")
	after.Prompt = "Fix ${input.results.fan.b.text}"
	files := node("files", "w")
	files.ForEach = &graph.ForEachDef{Source: "${input.results.w.files}", MaxItems: 10}
	author := node("author")
	author.Binding, author.Lane = "", "writer"
	author.Prompt = `Write it.${loop.round > 1 ? " Revise: ${loop.previous.author.text}" : ""}`
	check := node("check", "author")
	config := graph.NodeDef{ID: "config", Kind: graph.KindRequired, DependsOn: []string{"w"}, Loop: &graph.LoopDef{
		MaxRounds: 3, Review: "check", Until: "${length(input.results.author) > 0}",
		Members: []graph.NodeDef{author, check},
	}}
	ship := node("ship", "config")
	ship.Input = json.RawMessage(`{"command": ["cat"], "stdin": "${input.results.config.author.text}"}`)
	quiet := node("quiet")
	gate := graph.NodeDef{ID: "gate", Kind: graph.KindRequired, DependsOn: []string{"w"}, Loop: &graph.LoopDef{
		MaxRounds: 2, Review: "probe", Until: "${input.results.w.ready}", Members: []graph.NodeDef{node("probe")},
	}}
	def := &graph.Definition{Name: "dag", GlobalConcurrency: 1, Nodes: []graph.NodeDef{w, fan, after, files, config, ship, quiet, gate}}
	g, err := graph.New(def)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.ApplyData(graph.ExpandedData{Node: "fan", Keys: []string{"a", "b"}}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		n    *graph.NodeState
		want []string // in the refusal, in order
	}{
		{"a node read by a for_each source and an until", &graph.NodeState{Def: &def.Nodes[0], Vertex: "w"},
			[]string{`node "files" for_each (input.results.w.files)`, `loop "gate" until (input.results.w.ready)`, `of node "w"`}},
		{"the instance read by key", &graph.NodeState{Def: &def.Nodes[1], Vertex: "fan", Instance: true, Key: "b"},
			[]string{`node "after" prompt (input.results.fan.b.text)`, `of instance "b" of node "fan"`}},
		{"a loop member", &graph.NodeState{Def: &def.Nodes[4].Loop.Members[0], Vertex: "config", Loop: "config", Round: 1},
			[]string{`loop "config" until (input.results.author)`, `node "author" prompt in round 2 (loop.previous.author.text)`,
				`node "ship" input field stdin (input.results.config.author.text)`, `of member "author" of loop "config" (round 1)`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := nullResultUsed(def, g, tt.n)
			if !errors.Is(err, ErrResultNeeded) {
				t.Fatalf("nullResultUsed: %v, want ErrResultNeeded", err)
			}
			msg, at := err.Error(), 0
			for _, want := range tt.want {
				i := strings.Index(msg[at:], want)
				if i < 0 {
					t.Fatalf("refusal does not name %q (in order) in:\n%s", want, msg)
				}
				at += i + len(want)
			}
		})
	}
	for _, n := range []*graph.NodeState{
		{Def: &def.Nodes[1], Vertex: "fan", Instance: true, Key: "a"},                    // only b is read by key
		{Def: &def.Nodes[4].Loop.Members[0], Vertex: "config", Loop: "config", Round: 3}, // the last round: no next; ship reads it, though
		{Def: &def.Nodes[6], Vertex: "quiet"},                                            // nothing reads it
		{Def: &def.Nodes[4].Loop.Members[1], Vertex: "config", Loop: "config", Round: 1}, // the review: nothing reads it
	} {
		err := nullResultUsed(def, g, n)
		switch {
		case n.Round == 3:
			if err == nil || strings.Contains(err.Error(), "round 4") || !strings.Contains(err.Error(), `node "ship"`) {
				t.Errorf("member in the last round: %v, want only ship's read named", err)
			}
		case err != nil:
			t.Errorf("%s: %v, want no refusal", unitName(n), err)
		}
	}
}
