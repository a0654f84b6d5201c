package runstate

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/obversa/obversa/host/graph"
	"github.com/obversa/obversa/host/plan"
	"github.com/obversa/obversa/host/snapcodec"
)

// TestSnapshotStart: the run's start comes back from a snapshot exactly
// as it was, for definitions of every shape: lists empty or absent, a
// for_each of no items, items without a value, loops (nested, of no
// members), input empty or absent. an empty list and an absent one, a
// nil and an empty message, stay apart.
func TestSnapshotStart(t *testing.T) {
	var base plan.RunStarted
	if err := json.Unmarshal(started(t), &base); err != nil {
		t.Fatal(err)
	}
	member := func(id string, deps []string) graph.NodeDef {
		return graph.NodeDef{ID: id, Kind: graph.KindRequired, Lane: "w", DependsOn: deps}
	}
	for name, def := range map[string]*graph.Definition{
		"nil lists": {Name: "g", GlobalConcurrency: 1, Nodes: []graph.NodeDef{member("a", nil)}},
		"empty lists": {Name: "g", GlobalConcurrency: 1, KeyedConcurrency: []graph.KeyLimit{}, Nodes: []graph.NodeDef{
			member("a", []string{}), {ID: "b", Input: json.RawMessage{}, DependsOn: []string{"a"}}}},
		"no nodes":    {Name: "g", GlobalConcurrency: 1, Nodes: []graph.NodeDef{}},
		"nodes unset": {Name: "g"},
		"every field": {Name: "g", GlobalConcurrency: 3, KeyedConcurrency: []graph.KeyLimit{{Key: "k", Limit: 2}, {Key: "", Limit: 0}},
			StopOnError: true, RetryCapPerNode: 4, Nodes: []graph.NodeDef{
				{ID: "a", Kind: graph.KindRequired, Lane: "w", Prompt: "p", Input: json.RawMessage(`{"x":[1]}`), DependsOn: []string{},
					RetrySafe: true, TimeoutMS: 60000, Key: "k", Approval: true},
				{ID: "b", Kind: graph.KindOptional, Binding: "shell", DependsOn: []string{"a", ""}},
			}},
		"for_each": {Name: "g", GlobalConcurrency: 1, Nodes: []graph.NodeDef{
			{ID: "zero", ForEach: &graph.ForEachDef{}},
			{ID: "empty", ForEach: &graph.ForEachDef{Items: []graph.ForEachItem{}, MaxItems: 3}},
			{ID: "items", ForEach: &graph.ForEachDef{Items: []graph.ForEachItem{{Key: "a", Value: json.RawMessage(`"a"`)},
				{Key: "", Value: nil}, {Key: "c", Value: json.RawMessage{}}}}},
			{ID: "dyn", ForEach: &graph.ForEachDef{Source: "${input.results.x}", MaxItems: 10}},
		}},
		"loops": {Name: "g", GlobalConcurrency: 1, Nodes: []graph.NodeDef{
			{ID: "l0", Kind: graph.KindRequired, DependsOn: []string{}, Loop: &graph.LoopDef{}},
			{ID: "l1", Loop: &graph.LoopDef{MaxRounds: 2, Review: "r", Until: "u", Members: []graph.NodeDef{}}},
			{ID: "l2", DependsOn: []string{"l1"}, Loop: &graph.LoopDef{MaxRounds: 3, Review: "r", Members: []graph.NodeDef{
				member("d", nil), member("r", []string{"d"}),
				{ID: "inner", Loop: &graph.LoopDef{Members: []graph.NodeDef{member("x", []string{}), {ID: "f", ForEach: &graph.ForEachDef{}}}}},
			}}},
		}},
	} {
		t.Run(name, func(t *testing.T) {
			rs := base
			rs.Definition = def
			got := roundTripStart(t, &rs)
			if d := cmp.Diff(&rs, got, deep...); d != "" {
				t.Errorf("start restored (-recorded +restored):\n%s", d)
			}
			want, _ := json.Marshal(&rs)
			if b, _ := json.Marshal(got); !bytes.Equal(b, want) {
				t.Errorf("restored start encodes as\n%s\nwant\n%s", b, want)
			}
		})
	}
}

// roundTripStart returns rs as a snapshot brings it back: encoded
// (encodeStart) and decoded (decodeStart).
func roundTripStart(t *testing.T, rs *plan.RunStarted) *plan.RunStarted {
	t.Helper()
	var got *plan.RunStarted
	codecRoundTrip(t, func(w *snapcodec.Writer) error { return encodeStart(w, rs) }, func(r *snapcodec.Reader) (err error) {
		got, err = decodeStart(r)
		return err
	})
	return got
}

// codecRoundTrip writes a payload with write and reads it back with read,
// which must read it all; any error fails t.
func codecRoundTrip(t *testing.T, write func(*snapcodec.Writer) error, read func(*snapcodec.Reader) error) {
	t.Helper()
	w := snapcodec.NewWriter(0)
	if err := write(w); err != nil {
		t.Fatal(err)
	}
	b, err := w.Finish()
	if err != nil {
		t.Fatal(err)
	}
	r, err := snapcodec.NewReader(b)
	if err != nil {
		t.Fatal(err)
	}
	if err := read(r); err != nil {
		t.Fatal(err)
	}
	if err := r.Done(); err != nil {
		t.Fatal(err)
	}
}
