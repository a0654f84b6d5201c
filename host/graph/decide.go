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

// scan is what one pass over the units tells Decide: whether any waits
// for a person, and which vertices hold a position open.
type scan struct {
	paused bool
	active map[*VertexState]bool
}

func (s *State) scan() scan {
	sc := scan{active: map[*VertexState]bool{}}
	for _, n := range s.units {
		if n.Status == StatusPaused {
			sc.paused = true
		}
		if n.active() {
			sc.active[n.v] = true
		}
	}
	return sc
}

// Decide returns the decision at the current prefix (see Decision).
// Finalizers (nodes, for_each nodes and loops of kind finalizer) start
// once every other vertex has settled and nothing waits for a person.
// When nothing is in flight and nothing is to be recorded, the Outcome is
// returned instead.
func (s *State) Decide() Decision {
	blocked := s.blockedSet()
	sc := s.scan()
	settled := true // every non-finalizer is passed, failed, blocked or stopped
	for i, v := range s.vertices {
		st := v.Status()
		if v.Def.Kind != KindFinalizer && st != StatusPassed && st != StatusFailed && !blocked[i] && !(s.stopped && !sc.active[v]) {
			settled = false
		}
	}
	var d Decision
	for i, v := range s.vertices {
		// ready: a vertex that has not begun may begin now.
		ready := !v.started() && !blocked[i]
		if v.Def.Kind == KindFinalizer {
			ready = ready && settled && !sc.paused
		} else {
			ready = ready && !s.stopped && s.depsGreen(v.Def)
		}
		switch {
		case v.Loop != nil:
			s.decideLoop(&d, v, ready, sc.active[v])
		case v.Def.ForEach != nil && ready:
			if v.Def.ForEach.Source == "" {
				keys := make([]string, len(v.Def.ForEach.Items))
				for k, it := range v.Def.ForEach.Items {
					keys[k] = it.Key
				}
				d.Transitions = append(d.Transitions, Transition{EventNodeExpanded, ExpandedData{Node: v.Def.ID, Keys: keys}})
			} else {
				d.Asks = append(d.Asks, Ask{Kind: AskExpand, Vertex: v})
			}
		}
	}
	s.dispatches(&d, blocked, settled && !sc.paused)
	if len(d.Transitions)+len(d.Asks)+len(d.Dispatches) == 0 && s.inflight == 0 {
		d.Outcome = s.outcome(sc.paused)
	}
	return d
}

// dispatches adds the dispatchable units to d in declaration order, within
// global and keyed concurrency. finalizers says whether finalizer nodes
// may start.
func (s *State) dispatches(d *Decision, blocked []bool, finalizers bool) {
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
			continue // stop_on_error: no new dispatches but finalizers
		}
		switch {
		case v.Unit != nil:
			if fin && !finalizers || !fin && (blocked[i] || !s.depsGreen(v.Def)) {
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

// blockedSet marks the vertices that can never begin: non-finalizers that
// have not begun whose dependency failed for good (and is not optional)
// or is itself blocked, or every one of them once stop_on_error stopped
// new dispatches. It is memoised per call so deep or diamond-shaped
// graphs stay linear.
func (s *State) blockedSet() []bool {
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
		if v.Def.Kind != KindFinalizer && (!v.started() || v.Unit != nil && v.Unit.Status == StatusIdle) {
			b = s.stopped
			for _, dep := range v.Def.DependsOn {
				if b {
					break
				}
				j := s.vindex[dep]
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
