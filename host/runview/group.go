package runview

import (
	"slices"

	"github.com/obversa/obversa/host/graph"
	"github.com/obversa/obversa/host/runstate"
)

// Loop is where a loop stands: Round is the round in progress, or the
// last one once the loop ended (0 before it started); Status is the
// loop's status (idle, started, paused, passed, failed, blocked, skipped);
// LastReview is the last recorded verdict ("pass", "fail", "" for none)
// and Code the failure code of a failed loop.
type Loop struct {
	Loop       string `json:"loop"`
	Round      int    `json:"round"`
	MaxRounds  int    `json:"max_rounds"`
	Status     string `json:"status"`
	LastReview string `json:"last_review,omitempty"`
	Code       string `json:"code,omitempty"`
}

// Review is the verdict of a loop's review member in one round, as
// recorded (graph.ReviewedData): its status ("pass" or "fail"), its
// summary, and whether it ended the loop as passed.
type Review struct {
	Verdict  string `json:"verdict"`
	Summary  string `json:"summary,omitempty"`
	Accepted bool   `json:"accepted"`
}

// reviewOf returns the recorded verdict of n when n is the review member
// that gave it in its round; nil otherwise.
func reviewOf(st *runstate.State, n *graph.NodeState) *Review {
	if n.Loop == "" {
		return nil
	}
	v := st.Graph().Vertex(n.Loop)
	if v == nil || v.Loop == nil || n.Round < 1 || n.Round > len(v.Loop.Rounds) {
		return nil
	}
	rd := v.Loop.Rounds[n.Round-1].Review
	if rd == nil || rd.Member != n.Def.ID {
		return nil
	}
	return &Review{Verdict: rd.Outcome.Status, Summary: rd.Outcome.Summary, Accepted: rd.Accepted}
}

// ForEach is where a for_each node stands: Expanded once its instances
// are decided, then how many there are and how many passed, failed for
// good or are running (dispatched or started) now.
type ForEach struct {
	Node      string `json:"node"`
	Status    string `json:"status"`
	Expanded  bool   `json:"expanded"`
	Instances int    `json:"instances"`
	Passed    int    `json:"passed"`
	Failed    int    `json:"failed"`
	Running   int    `json:"running"`
	// Code is why a failed expansion has no instances
	// (FOR_EACH_INVALID, FOR_EACH_LIMIT, INPUT_RENDER).
	Code string `json:"code,omitempty"`
}

// Groups returns the graph's loops and for_each nodes in declaration
// order, each as it stands in the fold (the run's end applied, as
// VertexStatus and NodeStatus; held as they take it); empty (not nil)
// slices when the graph has none.
func Groups(st *runstate.State, held bool) ([]Loop, []ForEach) {
	loops, each := []Loop{}, []ForEach{}
	for _, v := range st.Graph().Vertices() {
		switch {
		case v.Loop != nil:
			loops = append(loops, loopView(st, v, held))
		case v.Def.ForEach != nil:
			each = append(each, forEachView(st, v, held))
		}
	}
	return loops, each
}

// loopView is where loop v stands (Groups).
func loopView(st *runstate.State, v *graph.VertexState, held bool) Loop {
	r := Loop{Loop: v.Def.ID, MaxRounds: v.Def.Loop.MaxRounds, Status: VertexStatus(st, v, held)}
	if cur := v.Loop.Current(); cur != nil {
		r.Round = cur.Round
	}
	for _, rd := range v.Loop.Rounds {
		if rd.Review != nil {
			r.LastReview = rd.Review.Outcome.Status
		}
	}
	if f := v.Failure(); f != nil && r.Status == StatusFailed {
		r.Code = f.Code
	}
	return r
}

// forEachView is where for_each node v stands (Groups).
func forEachView(st *runstate.State, v *graph.VertexState, held bool) ForEach {
	r := ForEach{Node: v.Def.ID, Status: VertexStatus(st, v, held), Expanded: v.Expansion != nil, Instances: len(v.Instances)}
	if v.Expansion != nil {
		r.Code = v.Expansion.Code
	}
	for _, n := range v.Instances {
		switch st.UnitStatus(n) {
		case graph.StatusPassed:
			r.Passed++
		case graph.StatusFailed:
			r.Failed++
		case graph.StatusDispatched, graph.StatusStarted:
			r.Running++
		}
	}
	if _, halted := st.Halted(held); halted {
		// Nothing carries the run on: what it left started was cut off.
		r.Running = 0
	}
	return r
}

// VertexStatus is a vertex's status as views show it: the fold's (a
// for_each node's or a loop's over its units) with the run's end applied
// (runstate.State.VertexStatus), or blocked, or skipped (idleStatus). A
// node left waiting for approval when the run ended is skipped
// (unitStatus); a for_each node or loop that began but is left, once the
// run has ended, with no unit in flight or paused (but for approval) —
// its other units never dispatched — is skipped as they are, not started
// or paused (docs/decisions.md, "Status after the end"). held says
// whether a live process holds the run, as the reader found it
// (NodeStatus).
func VertexStatus(st *runstate.State, v *graph.VertexState, held bool) string {
	s := st.VertexStatus(v)
	switch {
	case v.Unit != nil:
		s = unitStatus(st, v.Unit)
	case (s == graph.StatusStarted || s == graph.StatusPaused) && st.Ending() != runstate.NotEnded && !moving(st, v):
		s = graph.StatusIdle
	}
	if _, halted := st.Halted(held); halted && s == graph.StatusStarted && (v.Unit != nil || holds(st, v, graph.StatusStarted)) {
		// A group is started once a unit began; it is cut off only
		// when a unit's attempt was.
		return StatusInterrupted
	}
	return idleStatus(st, s, v.Def.ID)
}

// moving reports whether group v (a for_each node or a loop) holds a unit
// that is dispatched, started or paused (unitStatus): its instances, or
// the members of the loop's current round.
func moving(st *runstate.State, v *graph.VertexState) bool {
	return holds(st, v, graph.StatusDispatched, graph.StatusStarted, graph.StatusPaused)
}

// holds reports whether group v holds a unit (as moving counts them)
// whose status (unitStatus) is one of statuses.
func holds(st *runstate.State, v *graph.VertexState, statuses ...graph.Status) bool {
	units := v.Instances
	if v.Loop != nil {
		units = nil
		if r := v.Loop.Current(); r != nil {
			units = r.Members
		}
	}
	for _, u := range units {
		if slices.Contains(statuses, unitStatus(st, u)) {
			return true
		}
	}
	return false
}
