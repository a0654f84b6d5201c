package runview

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/obversa/obversa/host/graph"
	"github.com/obversa/obversa/store"
)

// TestLoopsAndForEach follows a run of a static for_each node "lint" over
// a and b and a loop "config" (author, then check, a binding reviewer)
// through a failed review into round 2, and checks what the views show:
// the nodes counted once each, where the loop and the for_each node
// stand, each instance and round's member by name, the graph's colours,
// the live view's attempts and notices, and did you mean for names and
// positions.
func TestLoopsAndForEach(t *testing.T) {
	t.Parallel()
	def := loopsAndForEachDef(4, 1)
	l := NewLive(foldDef(t, def), "/runs/r")
	var notices []Notice
	rev := l.State().Rev()
	record := func(typ string, v any) {
		t.Helper()
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		rev++
		n, err := l.Apply(store.Event{Rev: rev, Type: typ, Data: b, TS: t0.Add(time.Duration(rev) * time.Second)})
		if err != nil {
			t.Fatalf("%s %s: %v", typ, b, err)
		}
		notices = append(notices, n...)
	}
	// decide records what the graph decides by itself, then its dispatch.
	decide := func() []graph.Dispatch {
		t.Helper()
		for {
			d := l.State().Graph().Decide()
			if len(d.Transitions) == 0 {
				if len(d.Dispatches) > 0 {
					record(graph.EventNodeDispatched, graph.DispatchedData{Dispatches: d.Dispatches})
				}
				return d.Dispatches
			}
			for _, tr := range d.Transitions {
				record(tr.Type, tr.Data)
			}
		}
	}
	run := func(d graph.Dispatch, result string) {
		t.Helper()
		record(graph.EventAttemptStarted, graph.AttemptStartedData{Node: d.Node, Position: d.Position, AttemptID: d.Position})
		if result == "" {
			record(graph.EventNodeFailed, graph.FailedData{Node: d.Node, Position: d.Position, Code: "EFFECT_FAILED", FailureKind: "unknown", Message: "sh exited with code 1"})
			return
		}
		record(graph.EventNodeCompleted, graph.CompletedData{Node: d.Node, Position: d.Position, Result: json.RawMessage(result)})
	}
	first := decide()
	if got := positions(first); !cmp.Equal(got, []string{"dag/lint[a]/1", "dag/lint[b]/1", "dag/config/1/author/1"}) {
		t.Fatalf("first dispatch %v", got)
	}
	run(first[0], `"ok"`)
	run(first[2], `"draft"`)
	check := decide()
	run(check[0], "")
	record(graph.EventLoopReviewed, graph.ReviewedData{Loop: "config", Round: 1, Member: "check", Position: check[0].Position,
		Outcome: graph.ReviewOutcome{Status: "fail", Summary: "no timeout"}})
	if got := positions(decide()); !cmp.Equal(got, []string{"dag/config/2/author/1"}) {
		t.Fatalf("round 2 dispatch %v", got)
	}

	st, now := l.State(), t0.Add(time.Hour)
	s := Summarize(st, "/runs/r", now, true)
	if diff := cmp.Diff(Counts{Total: 2, Running: 2}, s.Nodes); diff != "" {
		t.Errorf("counts (-want +got):\n%s", diff)
	}
	wantLoops := []Loop{{Loop: "config", Round: 2, MaxRounds: 2, Status: StatusStarted, LastReview: "fail"}}
	wantEach := []ForEach{{Node: "lint", Status: StatusStarted, Expanded: true, Instances: 2, Passed: 1, Running: 1}}
	if diff := cmp.Diff(wantLoops, s.Loops); diff != "" {
		t.Errorf("loops (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantEach, s.ForEach); diff != "" {
		t.Errorf("for_each (-want +got):\n%s", diff)
	}
	var ids []string
	for _, n := range Nodes(st, now, true) {
		ids = append(ids, n.ID+" "+n.Status)
	}
	want := []string{"lint started", "lint[a] passed", "lint[b] dispatched", "config started",
		"config/1/author passed", "config/1/check failed", "config/2/author dispatched", "config/2/check idle"}
	if diff := cmp.Diff(want, ids); diff != "" {
		t.Errorf("nodes (-want +got):\n%s", diff)
	}
	if a, ok := NodeOf(st, "lint[a]", now, true); !ok || a.Group != "lint" || a.Key != "a" || a.Text != "ok" || a.Position != "dag/lint[a]/1" {
		t.Errorf("lint[a]: %v %+v", ok, a)
	}
	if c, ok := NodeOf(st, "config", now, true); !ok || c.Loop == nil || c.Loop.Round != 2 || c.ForEach != nil {
		t.Errorf("config: %v %+v", ok, c)
	}
	if m, ok := NodeOf(st, "config/1/author", now, true); !ok || m.Group != "config" || m.Round != 1 || m.Text != "draft" {
		t.Errorf("config/1/author: %v %+v", ok, m)
	}
	if _, ok := NodeOf(st, "lint[c]", now, true); ok {
		t.Errorf("lint[c] is no instance")
	}
	wantStatus := map[string]string{"lint": StatusStarted, "config": StatusStarted, "author": StatusDispatched, "check": StatusIdle}
	if diff := cmp.Diff(wantStatus, Statuses(st, true)); diff != "" {
		t.Errorf("statuses (-want +got):\n%s", diff)
	}
	var flight []string
	for _, a := range l.Snapshot(now, true).InFlight {
		flight = append(flight, a.Node)
	}
	if !cmp.Equal(flight, []string{"lint[b]", "config/2/author"}) && !cmp.Equal(flight, []string{"config/2/author", "lint[b]"}) {
		t.Errorf("in flight %v", flight)
	}
	// The binding reviewer's non-zero exit is the review's verdict: one
	// review notice, no failure.
	wantNotices := []Notice{{Kind: NoticeReview, Node: "config/1/check", Position: check[0].Position, Code: "fail", Message: "no timeout"}}
	if diff := cmp.Diff(wantNotices, notices); diff != "" {
		t.Errorf("notices (-want +got):\n%s", diff)
	}
	for given, wantNode := range map[string]string{"dag/lint[a]/1": "lint[a]", "lint[x]": "lint[a]", "config/1/autor": "config/1/author", "conf": "config"} {
		if got := SuggestNode(st, given); got != wantNode {
			t.Errorf("SuggestNode(%q) = %q, want %q", given, got, wantNode)
		}
	}
	if got := SuggestPosition(st, "lint[b]"); got != "dag/lint[b]/1" {
		t.Errorf("SuggestPosition(lint[b]) = %q", got)
	}
	if !Streams(st.Graph(), "lint") || !Streams(st.Graph(), "author") || Streams(st.Graph(), "config") {
		t.Errorf("Streams: lint and author name stream lines, config does not")
	}
}

func positions(ds []graph.Dispatch) []string {
	var out []string
	for _, d := range ds {
		out = append(out, d.Position)
	}
	return out
}

// loopsAndForEachDef is the graph the loop and for_each tests follow: a
// static for_each node "lint" over a and b, and a loop "config" whose
// member check (a binding reviewer) reviews author's work.
func loopsAndForEachDef(concurrency, retryCap int) *graph.Definition {
	lint := graph.NodeDef{ID: "lint", Kind: graph.KindRequired, Binding: "shell", DependsOn: []string{},
		ForEach: &graph.ForEachDef{MaxItems: 10, Items: []graph.ForEachItem{{Key: "a", Value: json.RawMessage(`"a"`)}, {Key: "b", Value: json.RawMessage(`"b"`)}}}}
	config := graph.NodeDef{ID: "config", Kind: graph.KindRequired, DependsOn: []string{}, Loop: &graph.LoopDef{MaxRounds: 2, Review: "check", Members: []graph.NodeDef{
		{ID: "author", Kind: graph.KindRequired, Binding: "shell", DependsOn: []string{}},
		{ID: "check", Kind: graph.KindRequired, Binding: "shell", DependsOn: []string{"author"}},
	}}}
	return &graph.Definition{Name: "dag", GlobalConcurrency: concurrency, RetryCapPerNode: retryCap, KeyedConcurrency: []graph.KeyLimit{}, Nodes: []graph.NodeDef{lint, config}}
}
