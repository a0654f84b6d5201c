package graph

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
)

// randomGraph builds a valid definition of n vertices: nodes, for_each
// nodes (static items or a source) and loops (members in a chain or
// side by side, the review last, with or without until) of every kind,
// keyed or not, each non-finalizer depending on earlier ones (now and
// then twice on the same one).
func randomGraph(r *rand.Rand, n int) *Definition {
	def := &Definition{Name: "g", GlobalConcurrency: 1 + r.IntN(4), StopOnError: r.IntN(4) == 0, RetryCapPerNode: r.IntN(3),
		KeyedConcurrency: []KeyLimit{{Key: "k", Limit: 1 + r.IntN(2)}}}
	for i := range n {
		id := fmt.Sprintf("n%d", i)
		kind := []string{KindRequired, KindRequired, KindOptional, KindFinalizer}[r.IntN(4)]
		var deps []string
		if kind != KindFinalizer {
			for j := range i {
				if def.Nodes[j].Kind != KindFinalizer && r.IntN(i+1) < 2 {
					deps = append(deps, def.Nodes[j].ID)
					if r.IntN(10) == 0 {
						deps = append(deps, def.Nodes[j].ID)
					}
				}
			}
		}
		var nd NodeDef
		switch r.IntN(5) {
		case 0:
			nd = NodeDef{ID: id, Kind: kind, DependsOn: deps, Loop: randomLoop(r, id)}
		case 1:
			nd = forEach(id, 3, "", []string{"a", "b", "c"}[:r.IntN(4)]...)
			nd.ForEach.MaxItems = max(1, len(nd.ForEach.Items)) + r.IntN(2)
			if r.IntN(2) == 0 {
				nd.ForEach.Items, nd.ForEach.Source = nil, "${x}"
			}
			nd.Kind, nd.DependsOn = kind, deps
		default:
			nd = NodeDef{ID: id, Kind: kind, Binding: "b", DependsOn: deps}
		}
		if nd.Loop == nil && r.IntN(3) == 0 {
			nd.Key = "k"
		}
		def.Nodes = append(def.Nodes, nd)
	}
	return def
}

func randomLoop(r *rand.Rand, id string) *LoopDef {
	l := &LoopDef{MaxRounds: 1 + r.IntN(3)}
	for m := range 1 + r.IntN(3) {
		mem := member(fmt.Sprintf("%sm%d", id, m))
		if m > 0 && r.IntN(2) == 0 {
			mem.DependsOn = []string{l.Members[m-1].ID}
		}
		if r.IntN(4) == 0 {
			mem.Key = "k"
		}
		l.Members = append(l.Members, mem)
	}
	l.Review = l.Members[len(l.Members)-1].ID
	if r.IntN(2) == 0 {
		l.Until = "${x}"
	}
	return l
}

// foldRandom folds one random graph with events in a random order —
// transitions and answers taken one at a time, dispatches, attempts
// started, results, failures (retried and final, a review's non-zero
// exit), pauses for approval and reconciliation, approvals and resumes
// interleaved as they come — and holds Decide to the full scan at every
// prefix, until the graph's outcome.
func foldRandom(t testing.TB, seed uint64, size int) {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 18))
	def := randomGraph(r, size)
	s, err := New(def)
	if err != nil {
		t.Fatalf("seed %d: %v", seed, err)
	}
	for step := range 5000 {
		d := checkDecide(t, s)
		if d.Outcome != nil && d.Outcome.Kind != OutcomePaused {
			return
		}
		var live []*NodeState
		for _, n := range s.units {
			if holdsPosition(n.Status) {
				live = append(live, n)
			}
		}
		var moves []func() any
		if len(d.Transitions) > 0 {
			moves = append(moves, func() any { return d.Transitions[r.IntN(len(d.Transitions))].Data })
		}
		if len(d.Asks) > 0 {
			moves = append(moves, func() any { return randomAnswer(r, d.Asks[r.IntN(len(d.Asks))]) })
		}
		if len(d.Transitions)+len(d.Asks) == 0 && len(d.Dispatches) > 0 {
			moves = append(moves, func() any { return DispatchedData{Dispatches: d.Dispatches} })
		}
		if len(live) > 0 {
			moves = append(moves, func() any { return randomSettle(r, live[r.IntN(len(live))]) })
		}
		if len(moves) == 0 {
			t.Fatalf("seed %d step %d: nothing to do and no outcome (%+v)", seed, step, d.Outcome)
		}
		ev := moves[r.IntN(len(moves))]()
		if err := s.ApplyData(ev); err != nil {
			t.Fatalf("seed %d step %d: %T %+v: %v", seed, step, ev, ev, err)
		}
	}
	t.Fatalf("seed %d: no outcome after 5000 events", seed)
}

// randomAnswer answers an ask as an executor could.
func randomAnswer(r *rand.Rand, a Ask) any {
	id := a.Vertex.Def.ID
	switch a.Kind {
	case AskExpand:
		keys := []string{"x", "y", "z", "w"}[:r.IntN(5)]
		if len(keys) > a.Vertex.Def.ForEach.MaxItems {
			return ExpandedData{Node: id, Keys: []string{}, Code: CodeForEachLimit, Message: "too many"}
		}
		return ExpandedData{Node: id, Keys: keys}
	case AskCondition:
		return ConditionData{Loop: id, Round: a.Round, Which: ConditionUntil, Met: r.IntN(2) == 0}
	}
	var v Verdict
	if a.Unit.VerdictFailure {
		v = FailureVerdict(a.Unit.Def.ID, a.Unit.Failure)
	} else {
		var err error
		if v, err = ParseVerdict(a.Unit.Result); err != nil {
			panic(err)
		}
	}
	return ReviewedData{Loop: id, Round: a.Round, Member: a.Unit.Def.ID, Position: a.Unit.Position, Outcome: v.Outcome(), Accepted: v.Status == VerdictPass}
}

// randomSettle returns an event about n's position that its status
// allows.
func randomSettle(r *rand.Rand, n *NodeState) any {
	at := func(code string) FailedData {
		f := FailedData{Node: n.Def.ID, Position: n.Position, Code: code}
		if code == "EFFECT_FAILED" && r.IntN(2) == 0 {
			f.FailureKind = "unknown"
		}
		return f
	}
	pause := func(kind string) PausedData {
		return PausedData{Node: n.Def.ID, Position: n.Position, Request: PauseRequest{Kind: kind, Position: n.Position}}
	}
	result := json.RawMessage(`"ok"`)
	if n.Loop != "" && n.Def.ID == n.v.Def.Loop.Review {
		result = json.RawMessage([]string{`{"status":"pass"}`, `{"status":"fail","summary":"s","findings":[{"reviewer":"r","evidence":"e"}]}`}[r.IntN(2)])
	}
	switch n.Status {
	case StatusDispatched:
		switch r.IntN(6) {
		case 0:
			return pause(PauseApproval)
		case 1:
			return at("EFFECT_FAILED")
		}
		return AttemptStartedData{Node: n.Def.ID, Position: n.Position}
	case StatusPaused:
		switch r.IntN(4) {
		case 0:
			if n.Pause.Kind == PauseApproval && n.Approved == "" {
				return ApprovalData{Position: n.Position, Decision: []string{DecisionAllow, DecisionDeny}[r.IntN(2)]}
			}
		case 1:
			return at("DENIED")
		case 2:
			return CompletedData{Node: n.Def.ID, Position: n.Position, Result: result}
		}
		return ResumedData{Node: n.Def.ID, Position: n.Position}
	}
	switch r.IntN(8) {
	case 0, 1:
		return at("EFFECT_FAILED")
	case 2:
		return at("DENIED")
	case 3:
		return pause(PauseReconcile)
	case 4:
		return ResumedData{Node: n.Def.ID, Position: n.Position}
	}
	return CompletedData{Node: n.Def.ID, Position: n.Position, Result: result}
}

// TestDecideIndexMatchesFullScan folds random graphs of every shape —
// loops and their rounds, for_each instances, finalizers, keyed and
// global concurrency, stop_on_error, retries, approvals, pauses and
// resumes — with events in random orders, and checks at every prefix that
// the indexed Decide decides what the full scan decides.
func TestDecideIndexMatchesFullScan(t *testing.T) {
	seeds := uint64(1500)
	if testing.Short() {
		seeds = 300
	}
	for seed := range seeds {
		foldRandom(t, seed, 2+int(seed%19))
	}
}

// FuzzDecideIndex is TestDecideIndexMatchesFullScan with seeds and sizes
// from the fuzzer.
func FuzzDecideIndex(f *testing.F) {
	for _, seed := range []uint64{0, 7, 18, 1234} {
		f.Add(seed, uint8(12))
	}
	f.Fuzz(func(t *testing.T, seed uint64, size uint8) {
		foldRandom(t, seed, 1+int(size%40))
	})
}
