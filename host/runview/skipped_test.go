package runview

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/obversa/obversa/host/graph"
	"github.com/obversa/obversa/host/runstate"
	"github.com/obversa/obversa/store"
)

// TestGroupSkippedOnceEnded: a for_each node and a loop that began (their
// instances decided, a round started) but whose remaining units were never
// dispatched are skipped once the run has ended, as those units are, and
// counted done — not started, which would read as if they still ran —
// while the run can go on they are started; every view says the same.
func TestGroupSkippedOnceEnded(t *testing.T) {
	t.Parallel()
	def := loopsAndForEachDef(1, 0)
	for _, tc := range []struct {
		name  string
		end   []any
		group string // lint's and config's status
		unit  string // lint[b]'s, author's and check's
		done  int
	}{
		{"running", nil, StatusStarted, StatusIdle, 0},
		{"paused", []any{graph.EventRunWaiting, runstate.Message("r", runstate.KindPaused, "OPERATOR_PAUSE", "paused")}, StatusStarted, StatusIdle, 0},
		{"stopped", []any{graph.EventRunFinished, runstate.Message("r", runstate.KindFail, runstate.CodeStopped, "stopped")}, StatusSkipped, StatusSkipped, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			l := NewLive(foldDef(t, def), "/runs/r")
			record := recorder(t, l)
			var first []graph.Dispatch
			for first == nil {
				d := l.State().Graph().Decide()
				for _, tr := range d.Transitions {
					record(tr.Type, tr.Data)
				}
				if len(d.Transitions) == 0 {
					if len(d.Dispatches) != 1 || d.Dispatches[0].Position != "dag/lint[a]/1" {
						t.Fatalf("first dispatch %+v", d.Dispatches)
					}
					first = d.Dispatches
					record(graph.EventNodeDispatched, graph.DispatchedData{Dispatches: first})
				}
			}
			record(graph.EventAttemptStarted, graph.AttemptStartedData{Node: "lint", Position: first[0].Position, AttemptID: "x"})
			record(graph.EventNodeCompleted, graph.CompletedData{Node: "lint", Position: first[0].Position, Result: json.RawMessage(`"ok"`)})
			for i := 0; i < len(tc.end); i += 2 {
				record(tc.end[i].(string), tc.end[i+1])
			}
			st := l.State()
			now := t0.Add(time.Hour)
			want := map[string]string{"lint": tc.group, "lint[a]": StatusPassed, "lint[b]": tc.unit,
				"config": tc.group, "config/1/author": tc.unit, "config/1/check": tc.unit}
			got := map[string]string{}
			for _, n := range Nodes(st, now, true) {
				got[n.ID] = n.Status
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("show's nodes (-want +got):\n%s", diff)
			}
			wantColours := map[string]string{"lint": tc.group, "config": tc.group, "author": tc.unit, "check": tc.unit}
			if diff := cmp.Diff(wantColours, Statuses(st, true)); diff != "" {
				t.Errorf("graph RUN colours (-want +got):\n%s", diff)
			}
			loops, each := Groups(st, true)
			if len(loops) != 1 || loops[0].Status != tc.group || len(each) != 1 || each[0].Status != tc.group {
				t.Errorf("status's loop and for_each lines %+v %+v; want %s", loops, each, tc.group)
			}
			if c := CountNodes(st, true); c.Done != tc.done || c.Skipped != tc.done || c.Total != 2 {
				t.Errorf("counts %+v; want %d of 2 done, skipped", c, tc.done)
			}
			if c := Summarize(st, "/runs/r", now, false).Nodes; c.Done != tc.done {
				t.Errorf("runs counts %+v; want %d done", c, tc.done)
			}
		})
	}
}

// TestApprovalSkippedOnceEnded: a node, or a for_each instance, waiting
// for approval is paused while the run can go on and skipped once the run
// has ended (its attempt never ran and no answer comes), counted done, its
// for_each node with it, and no view says what it waits for; a node
// waiting for a person to reconcile an attempt that may have run is
// stopped once the run has ended — done, not paused nor skipped, and no
// view says it waits.
func TestApprovalSkippedOnceEnded(t *testing.T) {
	t.Parallel()
	lint := graph.NodeDef{ID: "lint", Kind: graph.KindRequired, Binding: "shell", DependsOn: []string{},
		ForEach: &graph.ForEachDef{MaxItems: 10, Items: []graph.ForEachItem{{Key: "a", Value: json.RawMessage(`"a"`)}}}}
	def := &graph.Definition{Name: "dag", GlobalConcurrency: 3, RetryCapPerNode: 0, KeyedConcurrency: []graph.KeyLimit{}, Nodes: []graph.NodeDef{
		{ID: "c", Kind: graph.KindRequired, Binding: "shell", DependsOn: []string{}, Approval: true},
		{ID: "r", Kind: graph.KindRequired, Binding: "shell", DependsOn: []string{}},
		lint}}
	for _, tc := range []struct {
		name      string
		end       []any
		approval  string // c's, lint[a]'s and lint's status
		reconcile string // r's status
		done      int
	}{
		{"running", nil, StatusPaused, StatusPaused, 0},
		{"paused", []any{graph.EventRunWaiting, runstate.Message("r", runstate.KindPaused, "NODE_PAUSED", "paused")}, StatusPaused, StatusPaused, 0},
		{"stopped", []any{graph.EventRunFinished, runstate.Message("r", runstate.KindFail, runstate.CodeStopped, "stopped")}, StatusSkipped, StatusStopped, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			l := NewLive(foldDef(t, def), "/runs/r")
			record := recorder(t, l)
			var ds []graph.Dispatch
			for ds == nil {
				d := l.State().Graph().Decide()
				for _, tr := range d.Transitions {
					record(tr.Type, tr.Data)
				}
				if len(d.Transitions) == 0 {
					ds = d.Dispatches
					record(graph.EventNodeDispatched, graph.DispatchedData{Dispatches: ds})
				}
			}
			at := map[string]string{}
			for _, d := range ds {
				at[d.Node] = d.Position
			}
			if len(ds) != 3 || at["c"] != "dag/c/1" || at["r"] != "dag/r/1" || at["lint"] != "dag/lint[a]/1" {
				t.Fatalf("dispatches %+v", ds)
			}
			approval := graph.PauseRequest{Kind: graph.PauseApproval, Policy: graph.PolicyApproval}
			for _, n := range []string{"c", "lint"} {
				approval.Position = at[n]
				record(graph.EventNodePaused, graph.PausedData{Node: n, Position: at[n], Request: approval})
			}
			record(graph.EventAttemptStarted, graph.AttemptStartedData{Node: "r", Position: "dag/r/1", AttemptID: "x"})
			record(graph.EventNodePaused, graph.PausedData{Node: "r", Position: "dag/r/1",
				Request: graph.PauseRequest{Kind: graph.PauseReconcile, Position: "dag/r/1", AttemptID: "x"}})
			for i := 0; i < len(tc.end); i += 2 {
				record(tc.end[i].(string), tc.end[i+1])
			}
			st := l.State()
			now := t0.Add(time.Hour)
			want := map[string]string{"c": tc.approval, "r": tc.reconcile, "lint": tc.approval, "lint[a]": tc.approval}
			got := map[string]string{}
			for _, n := range Nodes(st, now, true) {
				got[n.ID] = n.Status
				if n.ForEach == nil && (n.Pause != nil) != (n.Status == StatusPaused) {
					t.Errorf("show %s: %s with pause %+v", n.ID, n.Status, n.Pause)
				}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("show's nodes (-want +got):\n%s", diff)
			}
			if c, _ := NodeOf(st, "c", now, true); c.Status != tc.approval {
				t.Errorf("show c: %s, want %s", c.Status, tc.approval)
			}
			delete(want, "lint[a]")
			if diff := cmp.Diff(want, Statuses(st, true)); diff != "" {
				t.Errorf("graph RUN colours (-want +got):\n%s", diff)
			}
			if _, each := Groups(st, true); len(each) != 1 || each[0].Status != tc.approval {
				t.Errorf("status's for_each lines %+v; want %s", each, tc.approval)
			}
			wantCounts := Counts{Total: 3, Done: tc.done, Skipped: min(tc.done, 2), Paused: 3 - tc.done}
			if tc.reconcile == StatusStopped {
				wantCounts.Stopped = 1
			}
			if diff := cmp.Diff(wantCounts, Summarize(st, "/runs/r", now, false).Nodes); diff != "" {
				t.Errorf("runs counts (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(wantCounts, l.Snapshot(now, false).Summary.Nodes); diff != "" {
				t.Errorf("live view counts (-want +got):\n%s", diff)
			}
		})
	}
}

// recorder returns a function that applies one event of type typ with
// data v to l, as the next revision.
func recorder(t *testing.T, l *Live) func(typ string, v any) {
	rev := l.State().Rev()
	return func(typ string, v any) {
		t.Helper()
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		rev++
		if _, err := l.Apply(store.Event{Rev: rev, Type: typ, Data: b, TS: t0.Add(time.Duration(rev) * time.Second)}); err != nil {
			t.Fatalf("%s %s: %v", typ, b, err)
		}
	}
}
