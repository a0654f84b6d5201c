package graph

import (
	"encoding/json"
	"errors"
	"fmt"
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

func TestDefinitionValidate(t *testing.T) {
	tests := []struct {
		name string
		def  Definition
	}{
		{"cycle", Definition{GlobalConcurrency: 1, Nodes: []NodeDef{node("a", KindRequired, "b"), node("b", KindRequired, "a")}}},
		{"self edge", Definition{GlobalConcurrency: 1, Nodes: []NodeDef{node("a", KindRequired, "a")}}},
		{"unknown dependency", Definition{GlobalConcurrency: 1, Nodes: []NodeDef{node("a", KindRequired, "x")}}},
		{"finalizer with edges", Definition{GlobalConcurrency: 1, Nodes: []NodeDef{node("a", KindRequired), node("f", KindFinalizer, "a")}}},
		{"depends on finalizer", Definition{GlobalConcurrency: 1, Nodes: []NodeDef{node("f", KindFinalizer), node("a", KindRequired, "f")}}},
		{"duplicate", Definition{GlobalConcurrency: 1, Nodes: []NodeDef{node("a", KindRequired), node("a", KindRequired)}}},
		{"key without limit", Definition{GlobalConcurrency: 1, Nodes: []NodeDef{{ID: "a", Kind: KindRequired, Binding: "b", Key: "k"}}}},
		{"zero concurrency", Definition{Nodes: []NodeDef{node("a", KindRequired)}}},
		{"lane and binding", Definition{GlobalConcurrency: 1, Nodes: []NodeDef{{ID: "a", Kind: KindRequired, Binding: "b", Lane: "l"}}}},
		{"bad kind", Definition{GlobalConcurrency: 1, Nodes: []NodeDef{node("a", "sometimes")}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.def.Validate(); !errors.Is(err, ErrInvalidDefinition) {
				t.Fatalf("Validate = %v, want ErrInvalidDefinition", err)
			}
		})
	}
}

// FuzzApply feeds arbitrary event sequences to the fold of a graph with a
// node, a loop and a for_each node: it must never panic and must keep its
// in-flight count consistent with the units' statuses.
func FuzzApply(f *testing.F) {
	f.Add(EventNodeDispatched, []byte(`{"dispatches":[{"node":"a","position":"dag/a/1"}]}`), EventNodeCompleted, []byte(`{"node":"a","position":"dag/a/1"}`))
	f.Add(EventNodePaused, []byte(`{"node":"a"}`), EventNodeResumed, []byte(`{}`))
	f.Add(EventNodeDispatched, []byte(`{"dispatches":[{"node":"a","position":"dag/a/1"}]}`), EventActionDecided,
		[]byte(`{"node":"a","position":"dag/a/1","attempt":1,"verdict":"deny","reason":"r","policy":"guard"}`))
	f.Add(EventNodeExpanded, []byte(`{"node":"e","keys":["x","y"]}`), EventNodeDispatched, []byte(`{"dispatches":[{"node":"e","position":"dag/e[x]/1"}]}`))
	f.Add(EventLoopStarted, []byte(`{"loop":"l","max_rounds":2}`), EventRoundStarted, []byte(`{"loop":"l","round":1}`))
	f.Fuzz(func(t *testing.T, t1 string, d1 []byte, t2 string, d2 []byte) {
		def := &Definition{GlobalConcurrency: 2, Nodes: []NodeDef{node("a", KindRequired), node("b", KindOptional, "a"), node("f", KindFinalizer),
			forEach("e", 3, "${x}"),
			{ID: "l", Kind: KindRequired, DependsOn: []string{}, Loop: loopDef("l", 2, "r", "${true}", member("w"), member("r", "w"))}}}
		s, err := New(def)
		if err != nil {
			t.Fatal(err)
		}
		for _, tr := range checkDecide(t, s).Transitions {
			if err := s.ApplyData(tr.Data); err != nil {
				t.Fatal(err)
			}
		}
		_ = s.Apply(t1, d1)
		_ = s.Apply(t2, d2)
		if got := len(s.InFlight()); got != s.inflight {
			t.Fatalf("inflight counter %d, statuses say %d", s.inflight, got)
		}
		d := checkDecide(t, s)
		for _, a := range d.Asks {
			_ = a.Vertex.Status()
		}
	})
}

func TestNoRetryForFinalFailures(t *testing.T) {
	tests := []struct {
		code, kind string
		retried    bool
	}{
		{"NODE_FAILED", "transient", true},
		{"NODE_FAILED", "rate_limit", true},
		{"TIMEOUT", "timeout", true},
		{"DENIED", "", false},
		{"INPUT_RENDER", "", false},
		{"RESULT_TOO_LARGE", "", false},
		{"ENGINE_UNAVAILABLE", "", false},
		{"NODE_FAILED", "invalid_config", false},
		{"NODE_FAILED", "auth", false},
	}
	for _, tt := range tests {
		t.Run(tt.code+"/"+tt.kind, func(t *testing.T) {
			def := &Definition{GlobalConcurrency: 1, RetryCapPerNode: 2, Nodes: []NodeDef{node("a", KindRequired)}}
			s, err := New(def)
			if err != nil {
				t.Fatal(err)
			}
			ds, _ := next(t, s)
			apply(t, s, EventNodeDispatched, DispatchedData{Dispatches: ds})
			apply(t, s, EventAttemptStarted, AttemptStartedData{Node: "a", Position: "dag/a/1"})
			apply(t, s, EventNodeFailed, FailedData{Node: "a", Position: "dag/a/1", Code: tt.code, FailureKind: tt.kind})
			next, out := next(t, s)
			if retried := len(next) == 1 && next[0].Position == "dag/a/2"; retried != tt.retried {
				t.Fatalf("retried = %v (next %v, outcome %+v), want %v", retried, next, out, tt.retried)
			}
		})
	}
}

// TestActionDecision: a policy decision is kept for the position's offer;
// a resume that answers a wait drops it (the policies are asked again),
// a crash's retry-safe resume of a started attempt keeps it, and a new
// position starts without one. A decision on a position that is not
// dispatched, or with no known verdict, does not replay.
func TestActionDecision(t *testing.T) {
	def := &Definition{GlobalConcurrency: 1, RetryCapPerNode: 1, Nodes: []NodeDef{node("a", KindRequired)}}
	s, err := New(def)
	if err != nil {
		t.Fatal(err)
	}
	ds, _ := next(t, s)
	apply(t, s, EventNodeDispatched, DispatchedData{Dispatches: ds})
	wait := ActionDecidedData{Node: "a", Position: "dag/a/1", Attempt: 1, Verdict: VerdictWait, Policy: "guard"}
	apply(t, s, EventActionDecided, wait)
	if d := s.Node("a").Decision; d == nil || d.Verdict != VerdictWait {
		t.Fatalf("decision %+v, want the wait", d)
	}
	apply(t, s, EventNodePaused, PausedData{Node: "a", Position: "dag/a/1", Request: PauseRequest{Kind: PauseApproval, Position: "dag/a/1"}})
	apply(t, s, EventNodeResumed, ResumedData{Node: "a", Position: "dag/a/1", Reason: ResumedOperator})
	if d := s.Node("a").Decision; d != nil {
		t.Fatalf("a resumed wait kept its decision %+v", d)
	}
	allow := wait
	allow.Verdict = VerdictAllow
	apply(t, s, EventActionDecided, allow)
	apply(t, s, EventAttemptStarted, AttemptStartedData{Node: "a", Position: "dag/a/1", RetrySafe: true})
	apply(t, s, EventNodeResumed, ResumedData{Node: "a", Position: "dag/a/1", Reason: ResumedRetrySafe})
	if d := s.Node("a").Decision; d == nil || d.Verdict != VerdictAllow {
		t.Fatalf("a crash's resume dropped the allow: %+v", d)
	}
	apply(t, s, EventAttemptStarted, AttemptStartedData{Node: "a", Position: "dag/a/1", RetrySafe: true})
	apply(t, s, EventNodeFailed, FailedData{Node: "a", Position: "dag/a/1", Code: "EFFECT_FAILED"})
	ds, _ = next(t, s)
	apply(t, s, EventNodeDispatched, DispatchedData{Dispatches: ds})
	if n := s.Node("a"); n.Position != "dag/a/2" || n.Decision != nil {
		t.Fatalf("the retry at %s starts with decision %+v", n.Position, n.Decision)
	}
	for name, bad := range map[string]ActionDecidedData{
		"not dispatched":  {Node: "a", Position: "dag/a/1", Verdict: VerdictAllow},
		"unknown verdict": {Node: "a", Position: "dag/a/2", Verdict: "maybe"},
	} {
		if err := s.Apply(EventActionDecided, mustJSON(t, bad)); !errors.Is(err, ErrInvalidEvent) {
			t.Errorf("%s: %v, want INVALID_EVENT", name, err)
		}
	}
}
