package graph

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func mustJSON(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func node(id, kind string, deps ...string) NodeDef {
	return NodeDef{ID: id, Kind: kind, Binding: "b", DependsOn: deps}
}

// simulate drives a state the way the executor does: record the graph's
// transitions, answer its asks (expansions from script["expand:<node>"],
// conditions from script["until:<loop>"] as "met"/"unmet", reviews from
// the review member's result), record the dispatch decision, start every
// dispatched position, then settle the oldest in-flight position with the
// scripted outcome of its unit (by NodeState.Name; one entry per attempt,
// default "pass"): "pass", "reject" (a review result that fails), "fail"
// (EFFECT_FAILED) or "exit" (a binding's non-zero exit, kind unknown). It
// returns the dispatch decisions in order and the outcome; steps, when
// not nil, collects the transitions and answers recorded.
func simulate(t *testing.T, def *Definition, script map[string][]string, steps ...*[]string) ([][]string, *Outcome) {
	t.Helper()
	s, err := New(def)
	if err != nil {
		t.Fatal(err)
	}
	take := func(name string) string {
		res := "pass"
		if sc := script[name]; len(sc) > 0 {
			res, script[name] = sc[0], sc[1:]
		}
		return res
	}
	step := func(typ string, v any) {
		t.Helper()
		if err := s.Apply(typ, mustJSON(t, v)); err != nil {
			t.Fatalf("%s %+v: %v", typ, v, err)
		}
		if len(steps) > 0 {
			*steps[0] = append(*steps[0], stepString(typ, v))
		}
	}
	var decisions [][]string
	var queue []*NodeState
	for i := 0; i < 10000; i++ {
		d := checkDecide(t, s)
		if d.Outcome != nil {
			return decisions, d.Outcome
		}
		if len(d.Transitions) > 0 {
			for _, tr := range d.Transitions {
				step(tr.Type, tr.Data)
			}
			continue
		}
		if len(d.Asks) > 0 {
			for _, a := range d.Asks {
				answer(t, a, take, step)
			}
			continue
		}
		if len(d.Dispatches) > 0 {
			var names []string
			for _, x := range d.Dispatches {
				names = append(names, x.Position)
			}
			decisions = append(decisions, names)
			if err := s.Apply(EventNodeDispatched, mustJSON(t, DispatchedData{Dispatches: d.Dispatches})); err != nil {
				t.Fatal(err)
			}
			for _, x := range d.Dispatches {
				if err := s.Apply(EventAttemptStarted, mustJSON(t, AttemptStartedData{Node: x.Node, Position: x.Position})); err != nil {
					t.Fatal(err)
				}
				queue = append(queue, s.AtPosition(x.Position))
			}
		}
		if len(queue) == 0 {
			t.Fatal("nothing in flight and no outcome")
		}
		n := queue[0]
		queue = queue[1:]
		result := json.RawMessage(`"ok"`)
		if n.Loop != "" && n.Def.ID == s.Vertex(n.Loop).Def.Loop.Review {
			result = json.RawMessage(`{"status":"pass"}`)
		}
		switch res := take(n.Name()); res {
		case "pass":
			err = s.Apply(EventNodeCompleted, mustJSON(t, CompletedData{Node: n.Def.ID, Position: n.Position, Result: result}))
		case "reject":
			err = s.Apply(EventNodeCompleted, mustJSON(t, CompletedData{Node: n.Def.ID, Position: n.Position,
				Result: json.RawMessage(`{"status":"fail","summary":"no timeout","findings":[{"reviewer":"r","evidence":"missing timeout"}]}`)}))
		case "exit":
			err = s.Apply(EventNodeFailed, mustJSON(t, FailedData{Node: n.Def.ID, Position: n.Position, Code: "EFFECT_FAILED", FailureKind: "unknown", Message: "sh exited with code 1: FAIL"}))
		default:
			err = s.Apply(EventNodeFailed, mustJSON(t, FailedData{Node: n.Def.ID, Position: n.Position, Code: "EFFECT_FAILED"}))
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Fatal("no outcome after 10000 steps")
	return nil, nil
}

// answer records the answer to an ask as the executor would.
func answer(t *testing.T, a Ask, take func(string) string, step func(string, any)) {
	t.Helper()
	id := a.Vertex.Def.ID
	switch a.Kind {
	case AskExpand:
		var keys []string
		if k := take("expand:" + id); k != "pass" {
			keys = strings.Split(k, ",")
		}
		d := ExpandedData{Node: id, Keys: keys}
		if len(keys) > a.Vertex.Def.ForEach.MaxItems {
			d = ExpandedData{Node: id, Keys: []string{}, Code: CodeForEachLimit, Message: "too many"}
		}
		step(EventNodeExpanded, d)
	case AskCondition:
		met := take("until:"+id) != "unmet"
		step(EventLoopCondition, ConditionData{Loop: id, Round: a.Round, Which: ConditionUntil, Met: met})
	case AskReview:
		var v Verdict
		var err error
		if a.Unit.VerdictFailure {
			v = FailureVerdict(a.Unit.Def.ID, a.Unit.Failure)
		} else if v, err = ParseVerdict(a.Unit.Result); err != nil {
			t.Fatal(err)
		}
		step(EventLoopReviewed, ReviewedData{Loop: id, Round: a.Round, Member: a.Unit.Def.ID, Position: a.Unit.Position,
			Outcome: v.Outcome(), Accepted: v.Status == VerdictPass})
	}
}

// stepString names a recorded step for the tests' expectations.
func stepString(typ string, v any) string {
	switch d := v.(type) {
	case ExpandedData:
		if d.Code != "" {
			return fmt.Sprintf("expand %s: %s", d.Node, d.Code)
		}
		return fmt.Sprintf("expand %s %v", d.Node, d.Keys)
	case LoopStartedData:
		return fmt.Sprintf("start %s max %d", d.Loop, d.MaxRounds)
	case RoundStartedData:
		return fmt.Sprintf("round %s %d", d.Loop, d.Round)
	case ConditionData:
		return fmt.Sprintf("until %s %d met=%v", d.Loop, d.Round, d.Met)
	case ReviewedData:
		return fmt.Sprintf("review %s %d %s", d.Loop, d.Round, d.Outcome.Status)
	case LoopFinishedData:
		return fmt.Sprintf("end %s %s %d %s", d.Loop, d.Outcome, d.Rounds, d.Code)
	}
	return typ
}

// next is Decide's dispatches and outcome (checked against the full
// scan).
func next(t testing.TB, s *State) ([]Dispatch, *Outcome) {
	t.Helper()
	d := checkDecide(t, s)
	return d.Dispatches, d.Outcome
}

func TestDAGRules(t *testing.T) {
	tests := []struct {
		name      string
		def       Definition
		script    map[string][]string
		decisions [][]string
		outcome   Outcome
	}{
		{
			name:      "chain runs in order",
			def:       Definition{GlobalConcurrency: 4, Nodes: []NodeDef{node("a", KindRequired), node("b", KindRequired, "a"), node("c", KindRequired, "b")}},
			decisions: [][]string{{"dag/a/1"}, {"dag/b/1"}, {"dag/c/1"}},
			outcome:   Outcome{Kind: OutcomeComplete, Nodes: []string{"a", "b", "c"}},
		},
		{
			name:      "global concurrency in declaration order",
			def:       Definition{GlobalConcurrency: 2, Nodes: []NodeDef{node("a", KindRequired), node("b", KindRequired), node("c", KindRequired)}},
			decisions: [][]string{{"dag/a/1", "dag/b/1"}, {"dag/c/1"}},
			outcome:   Outcome{Kind: OutcomeComplete, Nodes: []string{"a", "b", "c"}},
		},
		{
			name: "keyed concurrency",
			def: Definition{GlobalConcurrency: 4, KeyedConcurrency: []KeyLimit{{Key: "repo", Limit: 1}}, Nodes: []NodeDef{
				{ID: "a", Kind: KindRequired, Binding: "b", Key: "repo"}, {ID: "b", Kind: KindRequired, Binding: "b", Key: "repo"}, node("c", KindRequired)}},
			decisions: [][]string{{"dag/a/1", "dag/c/1"}, {"dag/b/1"}},
			outcome:   Outcome{Kind: OutcomeComplete, Nodes: []string{"a", "b", "c"}},
		},
		{
			name:      "retry at a new position within the cap",
			def:       Definition{GlobalConcurrency: 1, RetryCapPerNode: 1, Nodes: []NodeDef{node("a", KindRequired), node("b", KindRequired, "a")}},
			script:    map[string][]string{"a": {"fail", "pass"}},
			decisions: [][]string{{"dag/a/1"}, {"dag/a/2"}, {"dag/b/1"}},
			outcome:   Outcome{Kind: OutcomeComplete, Nodes: []string{"a", "b"}},
		},
		{
			name:      "retry cap exhausted fails and blocks dependents",
			def:       Definition{GlobalConcurrency: 1, RetryCapPerNode: 1, Nodes: []NodeDef{node("a", KindRequired), node("b", KindRequired, "a")}},
			script:    map[string][]string{"a": {"fail", "fail"}},
			decisions: [][]string{{"dag/a/1"}, {"dag/a/2"}},
			outcome:   Outcome{Kind: OutcomeFail, Code: "DAG_NODE_FAILED", Failed: []string{"a", "b"}},
		},
		{
			name:      "optional failure is green",
			def:       Definition{GlobalConcurrency: 1, Nodes: []NodeDef{node("a", KindOptional), node("b", KindRequired, "a")}},
			script:    map[string][]string{"a": {"fail"}},
			decisions: [][]string{{"dag/a/1"}, {"dag/b/1"}},
			outcome:   Outcome{Kind: OutcomeComplete, Nodes: []string{"b"}},
		},
		{
			name: "stop_on_error stops new dispatches, in-flight and finalizers still run",
			def: Definition{GlobalConcurrency: 2, StopOnError: true, RetryCapPerNode: 3, Nodes: []NodeDef{
				node("a", KindRequired), node("b", KindRequired), node("c", KindRequired), node("fin", KindFinalizer)}},
			script:    map[string][]string{"a": {"fail"}},
			decisions: [][]string{{"dag/a/1", "dag/b/1"}, {"dag/fin/1"}},
			outcome:   Outcome{Kind: OutcomeFail, Code: "DAG_NODE_FAILED", Failed: []string{"a", "c"}, Nodes: []string{"b", "fin"}},
		},
		{
			name:      "finalizer runs last on success",
			def:       Definition{GlobalConcurrency: 4, Nodes: []NodeDef{node("fin", KindFinalizer), node("a", KindRequired), node("b", KindRequired, "a")}},
			decisions: [][]string{{"dag/a/1"}, {"dag/b/1"}, {"dag/fin/1"}},
			outcome:   Outcome{Kind: OutcomeComplete, Nodes: []string{"fin", "a", "b"}},
		},
		{
			name:      "finalizer cannot turn a failed run green",
			def:       Definition{GlobalConcurrency: 4, Nodes: []NodeDef{node("a", KindRequired), node("fin", KindFinalizer)}},
			script:    map[string][]string{"a": {"fail"}},
			decisions: [][]string{{"dag/a/1"}, {"dag/fin/1"}},
			outcome:   Outcome{Kind: OutcomeFail, Code: "DAG_NODE_FAILED", Failed: []string{"a"}, Nodes: []string{"fin"}},
		},
		{
			name:      "failed finalizer fails the run",
			def:       Definition{GlobalConcurrency: 4, Nodes: []NodeDef{node("a", KindRequired), node("fin", KindFinalizer)}},
			script:    map[string][]string{"fin": {"fail"}},
			decisions: [][]string{{"dag/a/1"}, {"dag/fin/1"}},
			outcome:   Outcome{Kind: OutcomeFail, Code: "DAG_NODE_FAILED", Failed: []string{"fin"}, Nodes: []string{"a"}},
		},
		{
			name:      "event-driven: a freed node goes before its sibling settles",
			def:       Definition{GlobalConcurrency: 4, Nodes: []NodeDef{node("a", KindRequired), node("slow", KindRequired), node("b", KindRequired, "a")}},
			decisions: [][]string{{"dag/a/1", "dag/slow/1"}, {"dag/b/1"}},
			outcome:   Outcome{Kind: OutcomeComplete, Nodes: []string{"a", "slow", "b"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.script == nil {
				tt.script = map[string][]string{}
			}
			got, out := simulate(t, &tt.def, tt.script)
			if diff := cmp.Diff(tt.decisions, got); diff != "" {
				t.Errorf("decisions (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.outcome, *out); diff != "" {
				t.Errorf("outcome (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEventDrivenDispatchBeforeSiblingSettles(t *testing.T) {
	def := &Definition{GlobalConcurrency: 4, Nodes: []NodeDef{node("a", KindRequired), node("slow", KindRequired), node("b", KindRequired, "a")}}
	s, err := New(def)
	if err != nil {
		t.Fatal(err)
	}
	ds, _ := next(t, s)
	apply(t, s, EventNodeDispatched, DispatchedData{Dispatches: ds})
	apply(t, s, EventAttemptStarted, AttemptStartedData{Node: "a", Position: "dag/a/1"})
	apply(t, s, EventAttemptStarted, AttemptStartedData{Node: "slow", Position: "dag/slow/1"})
	apply(t, s, EventNodeCompleted, CompletedData{Node: "a", Position: "dag/a/1", Result: json.RawMessage(`1`)})
	got, out := next(t, s)
	if out != nil {
		t.Fatalf("outcome %+v while slow is in flight", out)
	}
	if diff := cmp.Diff([]Dispatch{{Node: "b", Position: "dag/b/1"}}, got); diff != "" {
		t.Fatalf("dispatch (-want +got):\n%s", diff)
	}
}

func apply(t *testing.T, s *State, typ string, v any) {
	t.Helper()
	if err := s.Apply(typ, mustJSON(t, v)); err != nil {
		t.Fatalf("%s: %v", typ, err)
	}
	checkDecide(t, s)
}

func TestReplayCheck(t *testing.T) {
	def := &Definition{GlobalConcurrency: 1, Nodes: []NodeDef{node("a", KindRequired), node("b", KindRequired)}}
	tests := []struct {
		name string
		typ  string
		data any
	}{
		{"dispatch differs", EventNodeDispatched, DispatchedData{Dispatches: []Dispatch{{Node: "b", Position: "dag/b/1"}}}},
		{"dispatch beyond concurrency", EventNodeDispatched, DispatchedData{Dispatches: []Dispatch{{Node: "a", Position: "dag/a/1"}, {Node: "b", Position: "dag/b/1"}}}},
		{"wrong position", EventNodeDispatched, DispatchedData{Dispatches: []Dispatch{{Node: "a", Position: "dag/a/2"}}}},
		{"result for idle node", EventNodeCompleted, CompletedData{Node: "a", Position: "dag/a/1"}},
		{"unknown node", EventAttemptStarted, AttemptStartedData{Node: "zz", Position: "dag/zz/1"}},
		{"empty dispatch", EventNodeDispatched, DispatchedData{}},
		{"malformed", EventNodeDispatched, json.RawMessage(`{"dispatches": 3}`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := New(def)
			if err != nil {
				t.Fatal(err)
			}
			var raw json.RawMessage
			if r, ok := tt.data.(json.RawMessage); ok {
				raw = r
			} else {
				raw = mustJSON(t, tt.data)
			}
			if err := s.Apply(tt.typ, raw); !errors.Is(err, ErrInvalidEvent) {
				t.Fatalf("Apply = %v, want ErrInvalidEvent", err)
			}
		})
	}
}

func TestPauseAndResume(t *testing.T) {
	def := &Definition{GlobalConcurrency: 2, Nodes: []NodeDef{node("a", KindRequired), node("b", KindRequired)}}
	s, err := New(def)
	if err != nil {
		t.Fatal(err)
	}
	ds, _ := next(t, s)
	apply(t, s, EventNodeDispatched, DispatchedData{Dispatches: ds})
	apply(t, s, EventNodePaused, PausedData{Node: "a", Position: "dag/a/1", Request: PauseRequest{Kind: "approval", Position: "dag/a/1"}})
	apply(t, s, EventNodePaused, PausedData{Node: "b", Position: "dag/b/1", Request: PauseRequest{Kind: "approval", Position: "dag/b/1"}})
	_, out := next(t, s)
	want := &Outcome{Kind: OutcomePaused, Paused: []PauseRequest{{Kind: "approval", Position: "dag/a/1"}, {Kind: "approval", Position: "dag/b/1"}}}
	if diff := cmp.Diff(want, out); diff != "" {
		t.Fatalf("outcome (-want +got):\n%s", diff)
	}
	apply(t, s, EventNodeResumed, ResumedData{Node: "a", Position: "dag/a/1", Reason: "operator"})
	if n := s.Node("a"); n.Status != StatusDispatched || n.AttemptStarted {
		t.Fatalf("after resume a is %s (started %v), want dispatched", n.Status, n.AttemptStarted)
	}
	if ds, out := next(t, s); len(ds) != 0 || out != nil {
		t.Fatalf("Next after resume = %v, %v; want nothing new while a is in flight", ds, out)
	}
}

// TestDispatchInParts: a decision may be recorded as leading parts, each
// re-derived at its point of the record; a part that skips a unit or goes
// beyond the decision is refused.
func TestDispatchInParts(t *testing.T) {
	def := &Definition{GlobalConcurrency: 3, Nodes: []NodeDef{node("a", KindRequired), node("b", KindRequired), node("c", KindRequired), node("d", KindRequired)}}
	s, err := New(def)
	if err != nil {
		t.Fatal(err)
	}
	whole, _ := next(t, s)
	if len(whole) != 3 {
		t.Fatalf("decision %v, want three dispatches", whole)
	}
	if err := s.Apply(EventNodeDispatched, mustJSON(t, DispatchedData{Dispatches: whole[1:2]})); !errors.Is(err, ErrInvalidEvent) {
		t.Fatalf("a part that skips the first unit: %v, want ErrInvalidEvent", err)
	}
	apply(t, s, EventNodeDispatched, DispatchedData{Dispatches: whole[:1]})
	rest, _ := next(t, s)
	if diff := cmp.Diff(whole[1:], rest); diff != "" {
		t.Fatalf("the rest of the decision (-want +got):\n%s", diff)
	}
	beyond := append(slices.Clone(rest), Dispatch{Node: "d", Position: "dag/d/1"})
	if err := s.Apply(EventNodeDispatched, mustJSON(t, DispatchedData{Dispatches: beyond})); !errors.Is(err, ErrInvalidEvent) {
		t.Fatalf("a part beyond the decision: %v, want ErrInvalidEvent", err)
	}
	apply(t, s, EventNodeDispatched, DispatchedData{Dispatches: rest})
	if ds, _ := next(t, s); len(ds) != 0 {
		t.Fatalf("after both parts the graph dispatches %v, want nothing (concurrency 3)", ds)
	}
}
