package graph

// Decision is what the graph decides at one prefix of the record
// (State.Decide). The executor records Transitions first, then answers
// Asks, then records Dispatches, asking again after each step; a record
// that took another order does not replay (ErrInvalidEvent).
type Decision struct {
	// Transitions are steps the graph takes by itself, to record in order:
	// graph:node-expanded of a static for_each, graph:loop-started,
	// graph:loop-round-started and graph:loop-finished. Each is a Type and
	// the typed Data to record.
	Transitions []Transition
	// Asks are judgements only the executor can make, from templates and
	// recorded results: a dynamic for_each's items, a loop's until
	// condition, a review's verdict. Each answer is recorded
	// (graph:node-expanded, graph:loop-condition, graph:loop-reviewed).
	Asks []Ask
	// Dispatches are the idle units whose dependencies are green, in
	// declaration order, within global and keyed concurrency.
	Dispatches []Dispatch
	// Outcome is set when nothing is in flight and there is nothing to
	// record.
	Outcome *Outcome

	units []*NodeState // the units of Dispatches
}

// Transition is one step the graph decides by itself: the event type and
// its data (ExpandedData, LoopStartedData, RoundStartedData or
// LoopFinishedData).
type Transition struct {
	Type string
	Data any
}

// AskKind names what an Ask wants.
type AskKind int

// Ask kinds.
const (
	// AskExpand wants a dynamic for_each node's items: render
	// NodeDef.ForEach.Source against the node's dependencies' results and
	// record graph:node-expanded.
	AskExpand AskKind = iota
	// AskCondition wants a loop's until condition for Round, rendered
	// against the round's results: record graph:loop-condition.
	AskCondition
	// AskReview wants the verdict of Round's review member (Unit) read
	// from its result or failure: record graph:loop-reviewed.
	AskReview
)

// Ask is one judgement the graph needs from the executor.
type Ask struct {
	Kind AskKind
	// Vertex is the for_each node or the loop asked about.
	Vertex *VertexState
	// Round is the loop's round (AskCondition, AskReview).
	Round int
	// Unit is the review member's unit (AskReview).
	Unit *NodeState
}

// Decide returns the decision at the current prefix (see Decision).
// Finalizers (nodes, for_each nodes and loops of kind finalizer) start
// once every other vertex has settled and nothing waits for a person.
// When nothing is in flight and nothing is to be recorded, the Outcome is
// returned instead.
//
// Decide reads the decision index the fold keeps (index.go), not every
// vertex: its cost grows with the vertices that may act now — the ready
// frontier, running loops and for_each nodes — and the dispatches offered,
// not with the graph.
func (s *State) Decide() Decision {
	settled := s.settled()
	paused := s.idx.paused > 0
	var d Decision
	for i := s.idx.stepping.next(0); i >= 0; i = s.idx.stepping.next(i + 1) {
		v := s.vertices[i]
		// ready: a vertex that has not begun may begin now.
		ready := !v.started() && !v.ix.blocked
		if v.Def.Kind == KindFinalizer {
			ready = ready && settled && !paused
		} else {
			ready = ready && !s.stopped && v.ix.pending == 0
		}
		switch {
		case v.Loop != nil:
			s.decideLoop(&d, v, ready, v.ix.active > 0)
		case v.Def.ForEach != nil && ready:
			expand(&d, v)
		}
	}
	s.dispatches(&d, settled && !paused)
	if len(d.Transitions)+len(d.Asks)+len(d.Dispatches) == 0 && s.inflight == 0 {
		d.Outcome = s.outcome(paused)
	}
	return d
}

// expand adds a ready for_each node's expansion to d: recorded from its
// items, or asked of the executor when they come from a source.
func expand(d *Decision, v *VertexState) {
	if v.Def.ForEach.Source != "" {
		d.Asks = append(d.Asks, Ask{Kind: AskExpand, Vertex: v})
		return
	}
	keys := make([]string, len(v.Def.ForEach.Items))
	for k, it := range v.Def.ForEach.Items {
		keys[k] = it.Key
	}
	d.Transitions = append(d.Transitions, Transition{EventNodeExpanded, ExpandedData{Node: v.Def.ID, Keys: keys}})
}

// dispatches adds the dispatchable units to d in declaration order, within
// global and keyed concurrency. finalizers says whether finalizer nodes
// may start. Once global concurrency is used up nothing more can be
// offered, so it stops reading the index there.
func (s *State) dispatches(d *Decision, finalizers bool) {
	inflight := s.inflight
	var keyed map[string]int
	offer := func(n *NodeState) bool {
		if n.Status != StatusIdle || inflight >= s.def.GlobalConcurrency {
			return false
		}
		if k := n.Def.Key; k != "" {
			if keyed == nil {
				keyed = map[string]int{}
			}
			if s.keyed[k]+keyed[k] >= s.keyLimit[k] {
				return false
			}
			keyed[k]++
		}
		inflight++
		d.Dispatches = append(d.Dispatches, Dispatch{Node: n.Def.ID, Position: n.position(n.Attempts + 1)})
		d.units = append(d.units, n)
		return true
	}
	for i := s.idx.dispatching.next(0); i >= 0 && inflight < s.def.GlobalConcurrency; i = s.idx.dispatching.next(i + 1) {
		v := s.vertices[i]
		fin := v.Def.Kind == KindFinalizer
		if s.stopped && !fin {
			continue // stop_on_error: no new dispatches but finalizers
		}
		switch {
		case v.Unit != nil:
			// In the index: idle, and a finalizer or not blocked with
			// its dependencies green.
			if !fin || finalizers {
				offer(v.Unit)
			}
		case v.Loop != nil:
			for _, n := range s.readyMembers(v) {
				offer(n)
			}
		default:
			// Instances are idle in the index and share one key: once
			// one is refused, so is every later one.
			for k := v.ix.idle.next(0); k >= 0 && offer(v.Instances[k]); k = v.ix.idle.next(k + 1) {
			}
		}
	}
}

func (s *State) outcome(paused bool) *Outcome {
	if paused {
		o := &Outcome{Kind: OutcomePaused}
		for _, v := range s.vertices {
			for _, n := range v.units() {
				if n.Status == StatusPaused && n.Pause != nil {
					o.Paused = append(o.Paused, *n.Pause)
				}
			}
		}
		return o
	}
	o := &Outcome{Kind: OutcomeComplete}
	for _, v := range s.vertices {
		switch {
		case v.Status() == StatusPassed:
			o.Nodes = append(o.Nodes, v.Def.ID)
		case v.Def.Kind == KindOptional:
		default:
			// Failed, blocked, or left unfinished by stop_on_error.
			o.Failed = append(o.Failed, v.Def.ID)
		}
	}
	if len(o.Failed) > 0 {
		o.Kind, o.Code = OutcomeFail, "DAG_NODE_FAILED"
	}
	return o
}
