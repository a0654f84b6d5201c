package graph

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// referenceNext is the decision Next makes, computed by scanning every
// node: the definition the dispatch index must agree with.
func referenceNext(s *State) ([]Dispatch, *Outcome) {
	var out []Dispatch
	blocked := s.blockedSet()
	inflight := s.inflight
	keyed := map[string]int{}
	settled, paused := true, false
	for i, n := range s.nodes {
		if n.Status == StatusPaused {
			paused = true
		}
		if n.Def.Kind != KindFinalizer && n.Status != StatusPassed && n.Status != StatusFailed && !isBlocked(blocked, i) {
			settled = false
		}
	}
	for i, n := range s.nodes {
		if n.Status != StatusIdle || inflight >= s.def.GlobalConcurrency {
			continue
		}
		if n.Def.Kind == KindFinalizer {
			if !settled || paused {
				continue
			}
		} else if isBlocked(blocked, i) || slices.ContainsFunc(n.Def.DependsOn, func(d string) bool { return !green(s.Node(d)) }) {
			continue
		}
		if k := n.Def.Key; k != "" {
			if s.keyed[k]+keyed[k] >= s.keyLimit[k] {
				continue
			}
			keyed[k]++
		}
		inflight++
		out = append(out, Dispatch{Node: n.Def.ID, Position: Position(n.Def.ID, n.Attempts+1)})
	}
	if len(out) > 0 || s.inflight > 0 {
		return out, nil
	}
	return nil, s.outcome(paused, blocked)
}

// randomDefinition builds a DAG of n nodes with random kinds, keys and
// dependencies on earlier nodes.
func randomDefinition(r *rand.Rand, n int) *Definition {
	def := &Definition{Name: "g", GlobalConcurrency: 1 + r.IntN(4), StopOnError: r.IntN(4) == 0, RetryCapPerNode: r.IntN(3),
		KeyedConcurrency: []KeyLimit{{Key: "k", Limit: 1 + r.IntN(2)}}}
	for i := range n {
		kind := []string{KindRequired, KindRequired, KindOptional, KindFinalizer}[r.IntN(4)]
		nd := NodeDef{ID: fmt.Sprintf("n%d", i), Kind: kind, Binding: "b", DependsOn: []string{}}
		if kind != KindFinalizer {
			for j := range i {
				if def.Nodes[j].Kind != KindFinalizer && r.IntN(i+1) < 2 {
					nd.DependsOn = append(nd.DependsOn, def.Nodes[j].ID)
				}
			}
			if r.IntN(3) == 0 {
				nd.Key = "k"
			}
		}
		def.Nodes = append(def.Nodes, nd)
	}
	return def
}

// TestNextMatchesFullScan folds random runs — passes, failures, retries,
// pauses and resumes in random order — and checks at every step that Next
// decides what a scan of every node decides.
func TestNextMatchesFullScan(t *testing.T) {
	for seed := range uint64(300) {
		r := rand.New(rand.NewPCG(seed, 7))
		def := randomDefinition(r, 2+r.IntN(14))
		s, err := New(def)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		for step := 0; ; step++ {
			if step > 500 {
				t.Fatalf("seed %d: no outcome after 500 steps", seed)
			}
			got, gotOut := s.Next()
			want, wantOut := referenceNext(s)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("seed %d step %d: dispatch (-full scan +Next):\n%s", seed, step, diff)
			}
			if diff := cmp.Diff(wantOut, gotOut); diff != "" {
				t.Fatalf("seed %d step %d: outcome (-full scan +Next):\n%s", seed, step, diff)
			}
			if gotOut != nil && gotOut.Kind != OutcomePaused {
				break
			}
			if err := randomStep(s, r, got); err != nil {
				t.Fatalf("seed %d step %d: %v", seed, step, err)
			}
		}
	}
}

// randomStep records the dispatch ds, if any, and then settles, pauses or
// resumes one position at random.
func randomStep(s *State, r *rand.Rand, ds []Dispatch) error {
	if len(ds) > 0 {
		if err := s.ApplyData(DispatchedData{Dispatches: ds}); err != nil {
			return err
		}
	}
	var live []*NodeState
	for _, n := range s.nodes {
		if n.Status == StatusDispatched || n.Status == StatusStarted || n.Status == StatusPaused {
			live = append(live, n)
		}
	}
	if len(live) == 0 {
		return nil
	}
	n := live[r.IntN(len(live))]
	switch n.Status {
	case StatusDispatched:
		return s.ApplyData(AttemptStartedData{Node: n.Def.ID, Position: n.Position})
	case StatusPaused:
		return s.ApplyData(ResumedData{Node: n.Def.ID, Position: n.Position})
	}
	switch r.IntN(5) {
	case 0, 1:
		return s.ApplyData(CompletedData{Node: n.Def.ID, Position: n.Position})
	case 2:
		return s.ApplyData(FailedData{Node: n.Def.ID, Position: n.Position, Code: "NODE_FAILED"})
	case 3:
		return s.ApplyData(FailedData{Node: n.Def.ID, Position: n.Position, Code: "DENIED"})
	default:
		return s.ApplyData(PausedData{Node: n.Def.ID, Position: n.Position, Request: PauseRequest{Kind: PauseReconcile, Position: n.Position}})
	}
}
