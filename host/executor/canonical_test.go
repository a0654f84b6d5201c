package executor

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/gowebpki/jcs"

	"github.com/obversa/obversa/host/graph"
	"github.com/obversa/obversa/host/plan"
	"github.com/obversa/obversa/plugin"
)

// members returns the JSON member names of struct type t, in field order.
func members(t reflect.Type) []string {
	var out []string
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" {
			name = f.Name
		}
		out = append(out, name)
	}
	return out
}

// TestEventTypesAreInMemberOrder checks that the event types a node
// records list their members in RFC 8785 order (plain ASCII names: byte
// order), so that encoding/json's form of them, where one is still made,
// needs no sorting either.
func TestEventTypesAreInMemberOrder(t *testing.T) {
	for _, v := range []any{graph.EngineAttemptData{}, graph.AttemptStartedData{}} {
		if m := members(reflect.TypeOf(v)); !slices.IsSorted(m) {
			t.Errorf("%T's members %v are not in RFC 8785 order", v, m)
		}
	}
}

// TestEngineCallIsRecordedCanonical checks that the events of a completed
// engine call reach the store in canonical form, so that it sorts
// nothing, and that what it records of the plugin types is what they
// marshal to.
func TestEngineCallIsRecordedCanonical(t *testing.T) {
	x := &Executor{plan: &plan.Plan{}}
	s := start{node: &graph.NodeDef{ID: "n"}, position: "dag/n/1", attempt: "sha256:ab"}
	target := plugin.Identity{Adapter: "mock", Provider: "local", ModelFamily: "scripted", Model: "m1", Tools: []string{"read"}}
	res := &plugin.RunResult{
		Parts: []plugin.Part{
			{Kind: plugin.PartToolUse, ToolName: "read", ToolID: "t1", JSON: json.RawMessage(`{"a":1}`)},
			{Kind: plugin.PartText, Text: "answer <b> & </b>", Final: true},
		},
		Usage:     plugin.Usage{Known: true, Input: 3, Output: 5, CacheRead: 7, CacheCreation: 11},
		Effective: plugin.Identity{Adapter: "mock", Provider: "local", ModelFamily: "scripted", Model: "m2"},
	}
	rec := graph.EngineAttemptData{Node: "n", Position: "dag/n/1", Sequence: 1, Requested: identityJSON(target), Effective: json.RawMessage("null")}
	events := x.engineCompleted(context.Background(), s, rec, res)
	events = append(events, newEvent(graph.EventAttemptStarted, graph.AttemptStartedData{Node: "n", Position: "dag/n/1", AttemptID: "sha256:ab"}))
	if len(events) != 3 {
		t.Fatalf("%d events, want the call, the completion and the start", len(events))
	}
	for _, e := range events {
		data := []byte(e.Data.(json.RawMessage))
		want, err := jcs.Transform(data)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(data, want) {
			t.Errorf("%s data\n%s\nis not canonical:\n%s", e.Type, data, want)
		}
	}
	for _, tt := range []struct {
		name         string
		plugin, ours json.RawMessage
	}{
		{"identity", mustJSON(target), identityJSON(target)},
		{"usage", mustJSON(res.Usage), usageJSON(res.Usage)},
		{"parts", mustJSON(res.Parts), partsJSON(res.Parts)},
		{"no parts", mustJSON([]plugin.Part(nil)), partsJSON(nil)},
		{"no tools", mustJSON(res.Effective), identityJSON(res.Effective)},
	} {
		a, err := jcs.Transform(tt.plugin)
		if err != nil {
			t.Fatal(err)
		}
		b, err := jcs.Transform(tt.ours)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%s: the plugin type marshals to %s, the record gets %s", tt.name, a, b)
		}
	}
}
