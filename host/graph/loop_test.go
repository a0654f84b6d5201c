package graph

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func member(id string, deps ...string) NodeDef {
	return NodeDef{ID: id, Kind: KindRequired, Binding: "b", DependsOn: deps}
}

func loopDef(id string, maxRounds int, review, until string, members ...NodeDef) *LoopDef {
	return &LoopDef{MaxRounds: maxRounds, Review: review, Until: until, Members: members}
}

// reviewGraph is plan → config{author, check} → ship, the run file's
// example of docs/run-file.md.
func reviewGraph(maxRounds int, until string) Definition {
	return Definition{GlobalConcurrency: 4, RetryCapPerNode: 1, Nodes: []NodeDef{
		node("plan", KindRequired),
		{ID: "config", Kind: KindRequired, DependsOn: []string{"plan"}, Loop: loopDef("config", maxRounds, "check", until, member("author"), member("check", "author"))},
		node("ship", KindRequired, "config"),
	}}
}

func TestLoops(t *testing.T) {
	tests := []struct {
		name      string
		def       Definition
		script    map[string][]string
		decisions [][]string
		steps     []string
		outcome   Outcome
	}{
		{
			name:   "a failed review repeats the round, the second passes",
			def:    reviewGraph(4, ""),
			script: map[string][]string{"config/1/check": {"reject"}},
			decisions: [][]string{{"dag/plan/1"}, {"dag/config/1/author/1"}, {"dag/config/1/check/1"},
				{"dag/config/2/author/1"}, {"dag/config/2/check/1"}, {"dag/ship/1"}},
			steps: []string{"start config max 4", "round config 1", "review config 1 fail", "round config 2",
				"review config 2 pass", "end config pass 2 "},
			outcome: Outcome{Kind: OutcomeComplete, Nodes: []string{"plan", "config", "ship"}},
		},
		{
			name:      "max_rounds reached fails the loop LOOP_EXHAUSTED and blocks its dependents",
			def:       reviewGraph(2, ""),
			script:    map[string][]string{"config/1/check": {"reject"}, "config/2/check": {"reject"}},
			decisions: [][]string{{"dag/plan/1"}, {"dag/config/1/author/1"}, {"dag/config/1/check/1"}, {"dag/config/2/author/1"}, {"dag/config/2/check/1"}},
			steps: []string{"start config max 2", "round config 1", "review config 1 fail", "round config 2",
				"review config 2 fail", "end config fail 2 LOOP_EXHAUSTED"},
			outcome: Outcome{Kind: OutcomeFail, Code: "DAG_NODE_FAILED", Failed: []string{"config", "ship"}, Nodes: []string{"plan"}},
		},
		{
			name:      "a binding reviewer's non-zero exit is its verdict, not retried",
			def:       reviewGraph(3, ""),
			script:    map[string][]string{"config/1/check": {"exit"}},
			decisions: [][]string{{"dag/plan/1"}, {"dag/config/1/author/1"}, {"dag/config/1/check/1"}, {"dag/config/2/author/1"}, {"dag/config/2/check/1"}, {"dag/ship/1"}},
			steps: []string{"start config max 3", "round config 1", "review config 1 fail", "round config 2",
				"review config 2 pass", "end config pass 2 "},
			outcome: Outcome{Kind: OutcomeComplete, Nodes: []string{"plan", "config", "ship"}},
		},
		{
			name:      "a member is retried within its round at a new position",
			def:       reviewGraph(3, ""),
			script:    map[string][]string{"config/1/author": {"fail", "pass"}},
			decisions: [][]string{{"dag/plan/1"}, {"dag/config/1/author/1"}, {"dag/config/1/author/2"}, {"dag/config/1/check/1"}, {"dag/ship/1"}},
			steps:     []string{"start config max 3", "round config 1", "review config 1 pass", "end config pass 1 "},
			outcome:   Outcome{Kind: OutcomeComplete, Nodes: []string{"plan", "config", "ship"}},
		},
		{
			name:      "a member failing for good fails the loop",
			def:       reviewGraph(3, ""),
			script:    map[string][]string{"config/1/author": {"fail", "fail"}},
			decisions: [][]string{{"dag/plan/1"}, {"dag/config/1/author/1"}, {"dag/config/1/author/2"}},
			steps:     []string{"start config max 3", "round config 1", "end config fail 1 EFFECT_FAILED"},
			outcome:   Outcome{Kind: OutcomeFail, Code: "DAG_NODE_FAILED", Failed: []string{"config", "ship"}, Nodes: []string{"plan"}},
		},
		{
			name:      "an unmet until condition skips the review and repeats the round",
			def:       reviewGraph(3, "${true}"),
			script:    map[string][]string{"until:config": {"unmet", "met"}},
			decisions: [][]string{{"dag/plan/1"}, {"dag/config/1/author/1"}, {"dag/config/2/author/1"}, {"dag/config/2/check/1"}, {"dag/ship/1"}},
			steps: []string{"start config max 3", "round config 1", "until config 1 met=false", "round config 2",
				"until config 2 met=true", "review config 2 pass", "end config pass 2 "},
			outcome: Outcome{Kind: OutcomeComplete, Nodes: []string{"plan", "config", "ship"}},
		},
		{
			name: "an optional loop's failure does not hold its dependents",
			def: Definition{GlobalConcurrency: 2, Nodes: []NodeDef{
				{ID: "l", Kind: KindOptional, DependsOn: []string{}, Loop: loopDef("l", 1, "r", "", member("r"))},
				node("after", KindRequired, "l"),
			}},
			script:    map[string][]string{"l/1/r": {"reject"}},
			decisions: [][]string{{"dag/l/1/r/1"}, {"dag/after/1"}},
			steps:     []string{"start l max 1", "round l 1", "review l 1 fail", "end l fail 1 LOOP_EXHAUSTED"},
			outcome:   Outcome{Kind: OutcomeComplete, Nodes: []string{"after"}},
		},
		{
			name: "members run in parallel within concurrency, the review last; a finalizer loop runs last",
			def: Definition{GlobalConcurrency: 2, Nodes: []NodeDef{
				{ID: "fin", Kind: KindFinalizer, DependsOn: []string{}, Loop: loopDef("fin", 1, "r2", "", member("r2"))},
				{ID: "l", Kind: KindRequired, DependsOn: []string{}, Loop: loopDef("l", 1, "r", "", member("a"), member("b"), member("c"), member("r"))},
			}},
			decisions: [][]string{{"dag/l/1/a/1", "dag/l/1/b/1"}, {"dag/l/1/c/1"}, {"dag/l/1/r/1"}, {"dag/fin/1/r2/1"}},
			steps:     []string{"start l max 1", "round l 1", "review l 1 pass", "end l pass 1 ", "start fin max 1", "round fin 1", "review fin 1 pass", "end fin pass 1 "},
			outcome:   Outcome{Kind: OutcomeComplete, Nodes: []string{"fin", "l"}},
		},
		{
			name: "stop_on_error: a required loop failing stops new dispatches",
			def: Definition{GlobalConcurrency: 1, StopOnError: true, Nodes: []NodeDef{
				{ID: "l", Kind: KindRequired, DependsOn: []string{}, Loop: loopDef("l", 1, "r", "", member("r"))},
				node("other", KindRequired),
			}},
			script:    map[string][]string{"l/1/r": {"reject"}},
			decisions: [][]string{{"dag/l/1/r/1"}},
			steps:     []string{"start l max 1", "round l 1", "review l 1 fail", "end l fail 1 LOOP_EXHAUSTED"},
			outcome:   Outcome{Kind: OutcomeFail, Code: "DAG_NODE_FAILED", Failed: []string{"l", "other"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			runScenario(t, &tt.def, tt.script, tt.decisions, tt.steps, tt.outcome)
		})
	}
}

func runScenario(t *testing.T, def *Definition, script map[string][]string, decisions [][]string, steps []string, outcome Outcome) {
	t.Helper()
	if script == nil {
		script = map[string][]string{}
	}
	var got []string
	ds, out := simulate(t, def, script, &got)
	if diff := cmp.Diff(decisions, ds); diff != "" {
		t.Errorf("decisions (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(steps, got); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(outcome, *out); diff != "" {
		t.Errorf("outcome (-want +got):\n%s", diff)
	}
}

func forEach(id string, maxItems int, source string, items ...string) NodeDef {
	n := node(id, KindRequired)
	n.ForEach = &ForEachDef{MaxItems: maxItems, Source: source}
	for _, k := range items {
		n.ForEach.Items = append(n.ForEach.Items, ForEachItem{Key: k, Value: json.RawMessage(`"` + k + `"`)})
	}
	return n
}

func TestForEach(t *testing.T) {
	keyed := forEach("lint", 10, "", "a", "b", "c")
	keyed.Key = "repo"
	optional := forEach("lint", 10, "", "a", "b")
	optional.Kind = KindOptional
	tests := []struct {
		name      string
		def       Definition
		script    map[string][]string
		decisions [][]string
		steps     []string
		outcome   Outcome
	}{
		{
			name:      "static items, global concurrency per instance, dependents wait for every instance",
			def:       Definition{GlobalConcurrency: 2, Nodes: []NodeDef{forEach("lint", 10, "", "a.go", "b.go", "c.go"), node("join", KindRequired, "lint")}},
			decisions: [][]string{{"dag/lint[a.go]/1", "dag/lint[b.go]/1"}, {"dag/lint[c.go]/1"}, {"dag/join/1"}},
			steps:     []string{"expand lint [a.go b.go c.go]"},
			outcome:   Outcome{Kind: OutcomeComplete, Nodes: []string{"lint", "join"}},
		},
		{
			name: "dynamic items decided when the source passes; keys escaped in positions",
			def: Definition{GlobalConcurrency: 4, Nodes: []NodeDef{node("plan", KindRequired),
				func() NodeDef {
					n := forEach("lint", 10, "${input.results.plan.files}")
					n.DependsOn = []string{"plan"}
					return n
				}(),
				node("join", KindRequired, "lint")}},
			script:    map[string][]string{"expand:lint": {"src/a b.go,x]y"}},
			decisions: [][]string{{"dag/plan/1"}, {"dag/lint[src%2Fa%20b.go]/1", "dag/lint[x%5Dy]/1"}, {"dag/join/1"}},
			steps:     []string{"expand lint [src/a b.go x]y]"},
			outcome:   Outcome{Kind: OutcomeComplete, Nodes: []string{"plan", "lint", "join"}},
		},
		{
			name:    "more items than max_items fails the node and blocks its dependents",
			def:     Definition{GlobalConcurrency: 4, Nodes: []NodeDef{forEach("lint", 2, "${input.results.x}"), node("join", KindRequired, "lint")}},
			script:  map[string][]string{"expand:lint": {"a,b,c"}},
			steps:   []string{"expand lint: FOR_EACH_LIMIT"},
			outcome: Outcome{Kind: OutcomeFail, Code: "DAG_NODE_FAILED", Failed: []string{"lint", "join"}},
		},
		{
			name:      "an instance failing for good fails the node once every instance settled",
			def:       Definition{GlobalConcurrency: 1, RetryCapPerNode: 1, Nodes: []NodeDef{forEach("lint", 10, "", "a", "b"), node("join", KindRequired, "lint")}},
			script:    map[string][]string{"lint[a]": {"fail", "fail"}},
			decisions: [][]string{{"dag/lint[a]/1"}, {"dag/lint[a]/2"}, {"dag/lint[b]/1"}},
			steps:     []string{"expand lint [a b]"},
			outcome:   Outcome{Kind: OutcomeFail, Code: "DAG_NODE_FAILED", Failed: []string{"lint", "join"}},
		},
		{
			name:      "an optional for_each with a failed instance lets its dependents run",
			def:       Definition{GlobalConcurrency: 4, Nodes: []NodeDef{optional, node("join", KindRequired, "lint")}},
			script:    map[string][]string{"lint[a]": {"fail"}},
			decisions: [][]string{{"dag/lint[a]/1", "dag/lint[b]/1"}, {"dag/join/1"}},
			steps:     []string{"expand lint [a b]"},
			outcome:   Outcome{Kind: OutcomeComplete, Nodes: []string{"join"}},
		},
		{
			name:      "keyed concurrency applies per instance",
			def:       Definition{GlobalConcurrency: 4, KeyedConcurrency: []KeyLimit{{Key: "repo", Limit: 2}}, Nodes: []NodeDef{keyed}},
			decisions: [][]string{{"dag/lint[a]/1", "dag/lint[b]/1"}, {"dag/lint[c]/1"}},
			steps:     []string{"expand lint [a b c]"},
			outcome:   Outcome{Kind: OutcomeComplete, Nodes: []string{"lint"}},
		},
		{
			name:      "an empty expansion passes at once",
			def:       Definition{GlobalConcurrency: 4, Nodes: []NodeDef{forEach("lint", 10, "${input.results.x}"), node("join", KindRequired, "lint")}},
			decisions: [][]string{{"dag/join/1"}},
			steps:     []string{"expand lint []"},
			outcome:   Outcome{Kind: OutcomeComplete, Nodes: []string{"lint", "join"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			runScenario(t, &tt.def, tt.script, tt.decisions, tt.steps, tt.outcome)
		})
	}
}

// TestLoopReplayCheck shows that a recorded loop or for_each step the
// graph would not take at its prefix is refused.
func TestLoopReplayCheck(t *testing.T) {
	def := reviewGraph(2, "")
	def.Nodes = append(def.Nodes, forEach("lint", 5, "", "a", "b"))
	prefix := func(t *testing.T) *State {
		s, err := New(&def)
		if err != nil {
			t.Fatal(err)
		}
		apply(t, s, EventNodeExpanded, ExpandedData{Node: "lint", Keys: []string{"a", "b"}})
		return s
	}
	tests := []struct {
		name string
		typ  string
		data any
	}{
		{"loop started before its dependency passed", EventLoopStarted, LoopStartedData{Loop: "config", MaxRounds: 2}},
		{"a round before the loop started", EventRoundStarted, RoundStartedData{Loop: "config", Round: 1}},
		{"a review nobody asked for", EventLoopReviewed, ReviewedData{Loop: "config", Round: 1, Outcome: ReviewOutcome{Status: VerdictPass}, Accepted: true}},
		{"a condition nobody asked for", EventLoopCondition, ConditionData{Loop: "config", Round: 1, Which: ConditionUntil, Met: true}},
		{"an end not decided", EventLoopFinished, LoopFinishedData{Loop: "config", Outcome: LoopPassed, Rounds: 1}},
		{"a second expansion", EventNodeExpanded, ExpandedData{Node: "lint", Keys: []string{"a", "b"}}},
		{"an expansion of a plain node", EventNodeExpanded, ExpandedData{Node: "plan", Keys: []string{"a"}}},
		{"an instance position that was not dispatched", EventAttemptStarted, AttemptStartedData{Node: "lint", Position: "dag/lint[a]/1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := prefix(t).Apply(tt.typ, mustJSON(t, tt.data)); !errors.Is(err, ErrInvalidEvent) {
				t.Fatalf("Apply = %v, want ErrInvalidEvent", err)
			}
		})
	}
	t.Run("static keys differ", func(t *testing.T) {
		s, _ := New(&def)
		if err := s.Apply(EventNodeExpanded, mustJSON(t, ExpandedData{Node: "lint", Keys: []string{"b", "a"}})); !errors.Is(err, ErrInvalidEvent) {
			t.Fatalf("Apply = %v, want ErrInvalidEvent", err)
		}
	})
	t.Run("dispatch while a step is due", func(t *testing.T) {
		s, _ := New(&def)
		// lint's expansion is due: plan's dispatch alone is not the decision.
		if err := s.Apply(EventNodeDispatched, mustJSON(t, DispatchedData{Dispatches: []Dispatch{{Node: "plan", Position: "dag/plan/1"}}})); !errors.Is(err, ErrInvalidEvent) {
			t.Fatalf("Apply = %v, want ErrInvalidEvent", err)
		}
	})
	t.Run("review at the wrong position or accepted against its status", func(t *testing.T) {
		s := prefix(t)
		ds, _ := next(t, s)
		apply(t, s, EventNodeDispatched, DispatchedData{Dispatches: ds})
		apply(t, s, EventAttemptStarted, AttemptStartedData{Node: "plan", Position: "dag/plan/1"})
		apply(t, s, EventNodeCompleted, CompletedData{Node: "plan", Position: "dag/plan/1"})
		d := checkDecide(t, s)
		for _, tr := range d.Transitions {
			apply(t, s, tr.Type, tr.Data)
		}
		d = checkDecide(t, s)
		for _, tr := range d.Transitions {
			apply(t, s, tr.Type, tr.Data)
		}
		for _, pos := range []string{"dag/config/1/author/1", "dag/config/1/check/1"} {
			ds, _ := next(t, s)
			apply(t, s, EventNodeDispatched, DispatchedData{Dispatches: ds})
			node := s.AtPosition(pos).Def.ID
			apply(t, s, EventAttemptStarted, AttemptStartedData{Node: node, Position: pos})
			apply(t, s, EventNodeCompleted, CompletedData{Node: node, Position: pos, Result: json.RawMessage(`{"status":"pass"}`)})
		}
		for _, bad := range []ReviewedData{
			{Loop: "config", Round: 1, Member: "check", Position: "dag/config/1/check/2", Outcome: ReviewOutcome{Status: VerdictPass}, Accepted: true},
			{Loop: "config", Round: 1, Member: "check", Position: "dag/config/1/check/1", Outcome: ReviewOutcome{Status: VerdictFail}, Accepted: true},
			{Loop: "config", Round: 1, Member: "check", Position: "dag/config/1/check/1", Outcome: ReviewOutcome{Status: "maybe"}},
		} {
			if err := s.Apply(EventLoopReviewed, mustJSON(t, bad)); !errors.Is(err, ErrInvalidEvent) {
				t.Errorf("Apply(%+v) = %v, want ErrInvalidEvent", bad, err)
			}
		}
		apply(t, s, EventLoopReviewed, ReviewedData{Loop: "config", Round: 1, Member: "check", Position: "dag/config/1/check/1", Outcome: ReviewOutcome{Status: VerdictPass}, Accepted: true})
		if err := s.Apply(EventLoopFinished, mustJSON(t, LoopFinishedData{Loop: "config", Outcome: LoopFailed, Rounds: 1, Code: CodeLoopExhausted})); !errors.Is(err, ErrInvalidEvent) {
			t.Fatalf("a loop end other than decided: %v", err)
		}
		apply(t, s, EventLoopFinished, LoopFinishedData{Loop: "config", Outcome: LoopPassed, Rounds: 1})
		if st := s.Vertex("config").Status(); st != StatusPassed {
			t.Fatalf("loop status %s", st)
		}
	})
}

func TestLoopDefinitionValidate(t *testing.T) {
	loop := func(l *LoopDef, deps ...string) Definition {
		return Definition{GlobalConcurrency: 1, Nodes: []NodeDef{node("plan", KindRequired), {ID: "l", Kind: KindRequired, DependsOn: deps, Loop: l}}}
	}
	tests := []struct {
		name string
		def  Definition
	}{
		{"review is no member", loop(loopDef("l", 2, "nope", "", member("a")))},
		{"max_rounds 0", loop(loopDef("l", 0, "a", "", member("a")))},
		{"max_rounds 101", loop(loopDef("l", 101, "a", "", member("a")))},
		{"no members", loop(&LoopDef{MaxRounds: 1, Review: "a"})},
		{"member depends outside the loop", loop(loopDef("l", 2, "a", "", member("a", "plan")))},
		{"member named like a node", loop(loopDef("l", 2, "plan", "", member("plan")))},
		{"member cycle", loop(loopDef("l", 2, "a", "", member("a", "b"), member("b", "a")))},
		{"member optional", loop(loopDef("l", 2, "a", "", NodeDef{ID: "a", Kind: KindOptional, Binding: "b"}))},
		{"loop with a lane", Definition{GlobalConcurrency: 1, Nodes: []NodeDef{{ID: "l", Kind: KindRequired, Lane: "w", Loop: loopDef("l", 1, "a", "", member("a"))}}}},
		{"for_each repeats a key", Definition{GlobalConcurrency: 1, Nodes: []NodeDef{forEach("f", 5, "", "a", "a")}}},
		{"for_each over max_items", Definition{GlobalConcurrency: 1, Nodes: []NodeDef{forEach("f", 1, "", "a", "b")}}},
		{"for_each max_items 0", Definition{GlobalConcurrency: 1, Nodes: []NodeDef{forEach("f", 0, "${x}")}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.def.Validate(); !errors.Is(err, ErrInvalidDefinition) {
				t.Fatalf("Validate = %v, want ErrInvalidDefinition", err)
			}
		})
	}
}

func TestEscapeKey(t *testing.T) {
	for _, k := range []string{"a.go", "", "src/a b.go", "x]y[z", "100%", "ünï/çødé", "%41", "a\nb"} {
		e := EscapeKey(k)
		for _, c := range []byte(e) {
			if c == '/' || c == '[' || c == ']' || c <= ' ' || c >= 0x7f {
				t.Errorf("EscapeKey(%q) = %q holds %q", k, e, c)
			}
		}
		if back, ok := UnescapeKey(e); !ok || back != k {
			t.Errorf("UnescapeKey(EscapeKey(%q)) = %q, %v", k, back, ok)
		}
	}
	if got := InstancePosition("lint", "src/a.go", 1); got != "dag/lint[src%2Fa.go]/1" {
		t.Errorf("InstancePosition = %q", got)
	}
	if _, ok := UnescapeKey("%41"); ok {
		t.Error("UnescapeKey accepts an escaped unreserved byte EscapeKey never writes")
	}
}

// FuzzEscapeKey: every key escapes to a position-safe string that
// unescapes back to it, and distinct keys never collide.
func FuzzEscapeKey(f *testing.F) {
	f.Add("a.go", "a%2Ego")
	f.Add("src/x", "src%2Fx")
	f.Fuzz(func(t *testing.T, a, b string) {
		ea := EscapeKey(a)
		if back, ok := UnescapeKey(ea); !ok || back != a {
			t.Fatalf("round trip of %q: %q %v", a, back, ok)
		}
		if a != b && ea == EscapeKey(b) {
			t.Fatalf("%q and %q both escape to %q", a, b, ea)
		}
		if k, ok := UnescapeKey(b); ok && EscapeKey(k) != b {
			t.Fatalf("UnescapeKey(%q) = %q, which escapes to %q", b, k, EscapeKey(k))
		}
	})
}
