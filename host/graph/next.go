package graph

import "slices"

// readyIndex keeps, as events are folded, what Next needs so that a
// decision costs the size of the frontier, not of the graph: replaying a
// record checks every recorded dispatch against Next, so a scan of every
// node per decision made a fold quadratic in the graph's size. It relies
// on passed and failed being final: a node that has them never changes
// again.
type readyIndex struct {
	deps       [][]int // node → its dependencies, by index
	dependents [][]int // node → the nodes depending on it
	// pending counts, per node, the dependencies that are not green yet.
	pending []int
	// cand holds, ascending, the idle non-finalizers whose dependencies
	// are all green: Next's candidates before blocking and capacity.
	cand []int
	// finalizers lists the finalizers, ascending.
	finalizers []int
	// open counts the non-finalizers that are neither passed nor failed.
	open int
	// hardFailed counts the nodes failed for good that are not optional:
	// while it is 0 and stop_on_error has not stopped the graph, no node
	// is blocked.
	hardFailed int
}

func (r *readyIndex) build(s *State) {
	n := len(s.nodes)
	r.deps, r.dependents, r.pending = make([][]int, n), make([][]int, n), make([]int, n)
	for i, ns := range s.nodes {
		for _, dep := range ns.Def.DependsOn {
			j := s.index[dep]
			r.deps[i] = append(r.deps[i], j)
			r.dependents[j] = append(r.dependents[j], i)
		}
		r.pending[i] = len(r.deps[i])
		if ns.Def.Kind == KindFinalizer {
			r.finalizers = append(r.finalizers, i)
			continue
		}
		r.open++
		if r.pending[i] == 0 {
			r.cand = append(r.cand, i)
		}
	}
}

// add puts node i into the candidates if it qualifies.
func (r *readyIndex) add(s *State, i int) {
	n := s.nodes[i]
	if n.Status != StatusIdle || n.Def.Kind == KindFinalizer || r.pending[i] != 0 {
		return
	}
	if k, found := slices.BinarySearch(r.cand, i); !found {
		r.cand = slices.Insert(r.cand, k, i)
	}
}

// dispatched notes that n left idle.
func (r *readyIndex) dispatched(s *State, n *NodeState) {
	if k, found := slices.BinarySearch(r.cand, s.index[n.Def.ID]); found {
		r.cand = slices.Delete(r.cand, k, k+1)
	}
}

// idle notes that n is idle again (a retry).
func (r *readyIndex) idle(s *State, n *NodeState) { r.add(s, s.index[n.Def.ID]) }

// settled notes that n passed or failed for good.
func (r *readyIndex) settled(s *State, n *NodeState) {
	if n.Def.Kind != KindFinalizer {
		r.open--
	}
	if n.Status == StatusFailed && n.Def.Kind != KindOptional {
		r.hardFailed++
	}
	if !green(n) {
		return
	}
	for _, j := range r.dependents[s.index[n.Def.ID]] {
		r.pending[j]--
		r.add(s, j)
	}
}

// green reports whether a node no longer holds its dependents back: passed,
// or failed for good while optional.
func green(n *NodeState) bool {
	return n.Status == StatusPassed || (n.Status == StatusFailed && n.Def.Kind == KindOptional)
}

// blockedSet marks the nodes that can never run: idle non-finalizers whose
// dependency failed for good (and is not optional) or is itself blocked, or
// every idle non-finalizer once stop_on_error stopped new dispatches. It is
// memoised per call so deep or diamond-shaped graphs stay linear. It
// returns nil when no node is blocked (nothing failed for good, nothing
// stopped), without a scan.
func (s *State) blockedSet() []bool {
	if !s.stopped && s.ready.hardFailed == 0 {
		return nil
	}
	const unknown, no, yes = 0, 1, 2
	memo := make([]int8, len(s.nodes))
	var visit func(i int) bool
	visit = func(i int) bool {
		if memo[i] != unknown {
			return memo[i] == yes
		}
		memo[i] = no
		n := s.nodes[i]
		b := false
		if n.Status == StatusIdle && n.Def.Kind != KindFinalizer {
			b = s.stopped
			for _, j := range s.ready.deps[i] {
				if b {
					break
				}
				d := s.nodes[j]
				b = (d.Status == StatusFailed && d.Def.Kind != KindOptional) || visit(j)
			}
		}
		if b {
			memo[i] = yes
		}
		return b
	}
	out := make([]bool, len(s.nodes))
	for i := range s.nodes {
		out[i] = visit(i)
	}
	return out
}

// isBlocked reads a blockedSet result (nil: nothing blocked).
func isBlocked(blocked []bool, i int) bool { return blocked != nil && blocked[i] }

// Blocked reports whether a node can never run (see Next).
func (s *State) Blocked(id string) bool {
	i, ok := s.index[id]
	return ok && isBlocked(s.blockedSet(), i)
}

// Next returns the dispatch decision at the current prefix: the idle nodes
// whose dependencies are green, in declaration order, within global and
// keyed concurrency. Finalizers are offered once every other node has
// settled and nothing waits for a person. When nothing is in flight and
// nothing can be dispatched, the outcome is returned instead.
//
// Finalizers and other nodes are never offered together (a finalizer
// waits until no other node can run), so offering the candidates first
// and the finalizers after keeps declaration order.
func (s *State) Next() ([]Dispatch, *Outcome) {
	var out []Dispatch
	blocked := s.blockedSet()
	inflight := s.inflight
	var keyed map[string]int
	offer := func(n *NodeState) {
		if k := n.Def.Key; k != "" {
			if keyed == nil {
				keyed = map[string]int{}
			}
			if s.keyed[k]+keyed[k] >= s.keyLimit[k] {
				return
			}
			keyed[k]++
		}
		inflight++
		out = append(out, Dispatch{Node: n.Def.ID, Position: Position(n.Def.ID, n.Attempts+1)})
	}
	for _, i := range s.ready.cand {
		if inflight >= s.def.GlobalConcurrency {
			break
		}
		if !isBlocked(blocked, i) {
			offer(s.nodes[i])
		}
	}
	// With a non-finalizer open and none blocked the graph is not settled:
	// no scan needed.
	if len(s.ready.finalizers) > 0 && inflight < s.def.GlobalConcurrency && (blocked != nil || s.ready.open == 0) {
		if settled, paused := s.settledPaused(blocked); settled && !paused {
			for _, i := range s.ready.finalizers {
				if inflight >= s.def.GlobalConcurrency {
					break
				}
				if n := s.nodes[i]; n.Status == StatusIdle {
					offer(n)
				}
			}
		}
	}
	if len(out) > 0 || s.inflight > 0 {
		return out, nil
	}
	_, paused := s.settledPaused(blocked)
	return nil, s.outcome(paused, blocked)
}

// settledPaused reports whether every non-finalizer is passed, failed or
// blocked, and whether any node waits for a person.
func (s *State) settledPaused(blocked []bool) (settled, paused bool) {
	settled = true
	for i, n := range s.nodes {
		if n.Status == StatusPaused {
			paused = true
		}
		if n.Def.Kind != KindFinalizer && n.Status != StatusPassed && n.Status != StatusFailed && !isBlocked(blocked, i) {
			settled = false
		}
		if paused && !settled {
			break
		}
	}
	return settled, paused
}

func (s *State) outcome(paused bool, blocked []bool) *Outcome {
	if paused {
		o := &Outcome{Kind: OutcomePaused}
		for _, n := range s.nodes {
			if n.Status == StatusPaused && n.Pause != nil {
				o.Paused = append(o.Paused, *n.Pause)
			}
		}
		return o
	}
	o := &Outcome{Kind: OutcomeComplete}
	for i, n := range s.nodes {
		switch {
		case n.Status == StatusPassed:
			o.Nodes = append(o.Nodes, n.Def.ID)
		case n.Def.Kind == KindOptional:
		case n.Status == StatusFailed || isBlocked(blocked, i):
			o.Failed = append(o.Failed, n.Def.ID)
		}
	}
	if len(o.Failed) > 0 {
		o.Kind, o.Code = OutcomeFail, "DAG_NODE_FAILED"
	}
	return o
}
