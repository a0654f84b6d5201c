package graph

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// referenceDecide is the decision Decide makes, computed the way it was
// before the decision index: by scanning every vertex and every unit. The
// tests hold the indexed Decide to it at every prefix they fold.
func referenceDecide(s *State) Decision {
	blocked := referenceBlocked(s)
	paused, active := false, map[*VertexState]bool{}
	for _, n := range s.units {
		paused = paused || n.Status == StatusPaused
		if holdsPosition(n.Status) {
			active[n.v] = true
		}
	}
	settled := true // every non-finalizer is passed, failed, blocked or stopped
	for i, v := range s.vertices {
		st := v.Status()
		if v.Def.Kind != KindFinalizer && st != StatusPassed && st != StatusFailed && !blocked[i] && !(s.stopped && !active[v]) {
			settled = false
		}
	}
	var d Decision
	for i, v := range s.vertices {
		ready := !v.started() && !blocked[i]
		if v.Def.Kind == KindFinalizer {
			ready = ready && settled && !paused
		} else {
			ready = ready && !s.stopped && referenceDepsGreen(s, v.Def)
		}
		switch {
		case v.Loop != nil:
			s.decideLoop(&d, v, ready, active[v])
		case v.Def.ForEach != nil && ready:
			expand(&d, v)
		}
	}
	referenceDispatches(s, &d, blocked, settled && !paused)
	if len(d.Transitions)+len(d.Asks)+len(d.Dispatches) == 0 && s.inflight == 0 {
		d.Outcome = s.outcome(paused)
	}
	return d
}

func referenceDispatches(s *State, d *Decision, blocked []bool, finalizers bool) {
	inflight := s.inflight
	keyed := map[string]int{}
	offer := func(n *NodeState) {
		if n.Status != StatusIdle || inflight >= s.def.GlobalConcurrency {
			return
		}
		if k := n.Def.Key; k != "" {
			if s.keyed[k]+keyed[k] >= s.keyLimit[k] {
				return
			}
			keyed[k]++
		}
		inflight++
		d.Dispatches = append(d.Dispatches, Dispatch{Node: n.Def.ID, Position: n.position(n.Attempts + 1)})
		d.units = append(d.units, n)
	}
	for i, v := range s.vertices {
		fin := v.Def.Kind == KindFinalizer
		if s.stopped && !fin {
			continue
		}
		switch {
		case v.Unit != nil:
			if fin && !finalizers || !fin && (blocked[i] || !referenceDepsGreen(s, v.Def)) {
				continue
			}
			offer(v.Unit)
		case v.Loop != nil:
			for _, n := range s.readyMembers(v) {
				offer(n)
			}
		default:
			for _, n := range v.Instances {
				offer(n)
			}
		}
	}
}

// referenceBlocked marks the vertices that can never begin, by a
// memoised walk of every vertex's dependencies.
func referenceBlocked(s *State) []bool {
	const unknown, no, yes = 0, 1, 2
	memo := make([]int8, len(s.vertices))
	var visit func(i int) bool
	visit = func(i int) bool {
		if memo[i] != unknown {
			return memo[i] == yes
		}
		memo[i] = no
		v := s.vertices[i]
		b := false
		if blockable(v) {
			b = s.stopped
			for _, dep := range v.Def.DependsOn {
				if b {
					break
				}
				j := s.link().index[dep]
				d := s.vertices[j]
				b = (d.Status() == StatusFailed && d.Def.Kind != KindOptional) || visit(j)
			}
		}
		if b {
			memo[i] = yes
		}
		return b
	}
	out := make([]bool, len(s.vertices))
	for i := range s.vertices {
		out[i] = visit(i)
	}
	return out
}

// referenceDependencyFailed marks the blocked vertices a failure blocks:
// a dependency failed for good (and is not optional) or is itself one of
// them; the others are blocked only because stop_on_error stopped the
// graph.
func referenceDependencyFailed(s *State, blocked []bool) []bool {
	memo := make([]int8, len(s.vertices)) // 0 unknown, 1 no, 2 yes
	var visit func(i int) bool
	visit = func(i int) bool {
		if memo[i] == 0 {
			memo[i] = 1
			v := s.vertices[i]
			for _, dep := range v.Def.DependsOn {
				j := s.link().index[dep]
				d := s.vertices[j]
				if blocked[i] && (d.Status() == StatusFailed && d.Def.Kind != KindOptional || visit(j)) {
					memo[i] = 2
					break
				}
			}
		}
		return memo[i] == 2
	}
	out := make([]bool, len(s.vertices))
	for i := range s.vertices {
		out[i] = visit(i)
	}
	return out
}

func referenceDepsGreen(s *State, d *NodeDef) bool {
	for _, dep := range d.DependsOn {
		v := s.Vertex(dep)
		st := v.Status()
		if st != StatusPassed && (st != StatusFailed || v.Def.Kind != KindOptional) {
			return false
		}
	}
	return true
}

// checkDecide fails t unless Decide, Blocked, DependencyFailed and Paused agree with the full scan
// at the state's current prefix, and returns the decision.
func checkDecide(t testing.TB, s *State) Decision {
	t.Helper()
	got, want := s.Decide(), referenceDecide(s)
	if diff := cmp.Diff(decisionView(want), decisionView(got)); diff != "" {
		t.Fatalf("Decide differs from the full scan (-scan +index):\n%s", diff)
	}
	paused := 0
	for _, n := range s.units {
		if n.Status == StatusPaused {
			paused++
		}
	}
	if s.Paused() != paused {
		t.Fatalf("Paused() = %d, %d units are paused", s.Paused(), paused)
	}
	blocked := referenceBlocked(s)
	for i, b := range blocked {
		if id := s.vertices[i].Def.ID; s.Blocked(id) != b {
			t.Fatalf("Blocked(%q) = %v, the full scan says %v", id, !b, b)
		}
	}
	for i, b := range referenceDependencyFailed(s, blocked) {
		if id := s.vertices[i].Def.ID; s.DependencyFailed(id) != b {
			t.Fatalf("DependencyFailed(%q) = %v, the full scan says %v", id, !b, b)
		}
	}
	return got
}

// decisionViewT is a Decision in comparable form (decisionView): asks by vertex id and
// unit name, the dispatched units by name.
type decisionViewT struct {
	Transitions []Transition
	Asks        []string
	Dispatches  []Dispatch
	Units       []string
	Outcome     *Outcome
}

func decisionView(d Decision) decisionViewT {
	out := decisionViewT{Transitions: d.Transitions, Dispatches: d.Dispatches, Outcome: d.Outcome}
	for _, a := range d.Asks {
		u := ""
		if a.Unit != nil {
			u = a.Unit.Name() + "@" + a.Unit.Position
		}
		out.Asks = append(out.Asks, fmt.Sprintf("%s %s %d %s", askNames[a.Kind], a.Vertex.Def.ID, a.Round, u))
	}
	for _, n := range d.units {
		out.Units = append(out.Units, n.Name())
	}
	return out
}
