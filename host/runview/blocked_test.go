package runview

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/obversa/obversa/host/graph"
	"github.com/obversa/obversa/host/runstate"
)

// stopOnErrorDef is a graph under stop_on_error: a, b depending on a, the
// for_each node e (x and y) and c, which depends on nothing; one dispatch
// at a time, in that order.
func stopOnErrorDef() *graph.Definition {
	return &graph.Definition{Name: "dag", GlobalConcurrency: 2, RetryCapPerNode: 1, StopOnError: true, KeyedConcurrency: []graph.KeyLimit{}, Nodes: []graph.NodeDef{
		{ID: "a", Kind: graph.KindRequired, Binding: "shell", DependsOn: []string{}},
		{ID: "b", Kind: graph.KindRequired, Binding: "shell", DependsOn: []string{"a"}},
		{ID: "e", Kind: graph.KindRequired, Binding: "shell", DependsOn: []string{},
			ForEach: &graph.ForEachDef{MaxItems: 10, Items: []graph.ForEachItem{{Key: "x", Value: json.RawMessage(`"x"`)}, {Key: "y", Value: json.RawMessage(`"y"`)}}}},
		{ID: "c", Kind: graph.KindRequired, Binding: "shell", DependsOn: []string{}},
	}}
}

// TestStopOnErrorBlockedSaysWhy: a node stop_on_error kept from running
// says so — STOPPED_ON_ERROR, not started (c, which has no dependency) or
// not finished (e, one instance of which never ran) — and a node whose
// dependency failed says BLOCKED, in the result a new run records, in
// the result read back from a record written before STOPPED_ON_ERROR
// (which said BLOCKED "a dependency failed" of them all; the record is
// not rewritten), in show's nodes and in the live view.
func TestStopOnErrorBlockedSaysWhy(t *testing.T) {
	t.Parallel()
	work := []any{
		graph.EventNodeExpanded, graph.ExpandedData{Node: "e", Keys: []string{"x", "y"}},
		graph.EventNodeDispatched, graph.DispatchedData{Dispatches: []graph.Dispatch{{Node: "a", Position: "dag/a/1"}, {Node: "e", Position: graph.InstancePosition("e", "x", 1)}}},
		graph.EventAttemptStarted, graph.AttemptStartedData{Node: "a", Position: "dag/a/1", AttemptID: "x1"},
		graph.EventNodeFailed, graph.FailedData{Node: "a", Position: "dag/a/1", Code: "NODE_FAILED", Message: "no"},
		graph.EventAttemptStarted, graph.AttemptStartedData{Node: "e", Position: graph.InstancePosition("e", "x", 1), AttemptID: "x2"},
		graph.EventNodeCompleted, graph.CompletedData{Node: "e", Position: graph.InstancePosition("e", "x", 1), Result: json.RawMessage(`"ok"`)},
	}
	wantErrors := map[string]runstate.NodeError{
		"a": {Code: "NODE_FAILED", Message: "no", Position: "dag/a/1"},
		"b": {Code: runstate.CodeBlocked, Message: "a dependency failed"},
		"e": {Code: runstate.CodeStoppedOnError, Message: "not finished: the run stopped on an error (stop_on_error)"},
		"c": {Code: runstate.CodeStoppedOnError, Message: "not started: the run stopped on an error (stop_on_error)"},
	}
	running := foldDef(t, stopOnErrorDef(), work...)
	out := running.Graph().Decide().Outcome
	if out == nil {
		t.Fatal("the graph has no outcome once a failed and e[x] passed")
	}
	recorded := runstate.OutcomeResult("r", running.Graph(), out)
	if diff := cmp.Diff(wantErrors, recorded.Output.Errors); diff != "" {
		t.Fatalf("the result a run records (-want +got):\n%s", diff)
	}
	old := runstate.OutcomeResult("r", running.Graph(), out)
	for id, e := range old.Output.Errors {
		if e.Position == "" {
			old.Output.Errors[id] = runstate.NodeError{Code: runstate.CodeBlocked, Message: "a dependency failed"}
		}
	}
	tests := []struct {
		name   string
		result *runstate.Result
	}{
		{"recorded now", recorded},
		{"recorded before STOPPED_ON_ERROR", old},
		{"recorded compact", recorded.Compact()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			before, err := json.Marshal(tt.result)
			if err != nil {
				t.Fatal(err)
			}
			st := foldDef(t, stopOnErrorDef(), append(append([]any{}, work...), graph.EventRunFinished, tt.result)...)
			if diff := cmp.Diff(wantErrors, st.Result().Output.Errors); diff != "" {
				t.Errorf("status and show's result (-want +got):\n%s", diff)
			}
			if after, _ := json.Marshal(tt.result); string(after) != string(before) {
				t.Errorf("reading the result changed it:\n%s\nwas\n%s", after, before)
			}
			now := t0.Add(time.Minute)
			if diff := cmp.Diff(wantErrors, NewLive(st, "/runs/r").Snapshot(now, false).Result.Output.Errors); diff != "" {
				t.Errorf("live view's result (-want +got):\n%s", diff)
			}
			got := map[string]*runstate.NodeError{}
			for _, n := range Nodes(st, now, true) {
				got[n.ID+" "+n.Status] = n.Blocked
			}
			b, c := wantErrors["b"], wantErrors["c"]
			want := map[string]*runstate.NodeError{"a failed": nil, "b blocked": &b, "c blocked": &c, "e skipped": nil,
				"e[x] passed": nil, "e[y] skipped": nil}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("show's nodes: why each is blocked (-want +got):\n%s", diff)
			}
			if n, _ := NodeOf(st, "c", now, true); n.Blocked == nil || *n.Blocked != c {
				t.Errorf("show RUN c: blocked %+v, want %+v", n.Blocked, c)
			}
		})
	}
}
