package graph

import "slices"

// The decision index. Replaying a record checks every recorded dispatch,
// loop step and expansion against Decide, so a Decide that looked at every
// vertex made a fold quadratic in the graph's size. The State instead
// keeps, as each event is folded, what Decide reads:
//
//   - per vertex: how many dependencies are not green yet (pending),
//     whether it is blocked, how many of its units hold a position open;
//   - the vertices that may take a step (stepping: a for_each node not
//     yet expanded, a loop not finished, once ready or started) and those
//     that may offer a dispatch (dispatching: an idle node, a running
//     loop, a for_each node with idle instances), as ordered sets, so
//     Decide reads them in declaration order;
//   - counts for the finalizer rule: paused units, and the non-finalizer
//     vertices still open (neither passed, failed nor blocked), with those
//     of them holding a position.
//
// It rests on what the rules make final: passed and failed vertices never
// change again, so green and failed-for-good are seen once; a blocked
// vertex never begins, so blocked is too. A node offered again after a
// failure (the one way back to idle) cannot become blocked: its
// dependencies were green when it was first dispatched, and retries
// happen only without stop_on_error. The test reference
// (decide_reference_test.go) is the scan of every vertex the index
// replaces, and the tests hold every Decide to it.

// vertexIndex is one vertex's part of the decision index.
type vertexIndex struct {
	idx        int  // position in the definition
	pending    int  // dependencies not green yet (a repeated edge counts twice)
	blocked    bool // can never begin (see Blocked)
	byDep      bool // blocked because a dependency failed for good (see DependencyFailed)
	green      bool // green, seen once
	hard       bool // failed for good while not optional, seen once
	active     int  // units dispatched, started or paused
	open       bool // counted in State.open
	openActive bool // counted in State.openActive
	idle       bitSet
}

// links is what the definition alone decides of a State and only the
// fold of an event and a look-up by id read: each vertex's index by id,
// and the vertices depending on each (its dependents: a vertex's
// entries of deps from from[i] to from[i+1], ascending, a repeated edge
// twice). A restore does not build them (docs/architecture.md, "Fold
// snapshot"): a reader that folds no event after the snapshot and looks
// no vertex up by id, as a status of a finished run, never needs them.
type links struct {
	index map[string]int
	from  []int32
	deps  []int32
}

// link returns s's links, building them on first use. Safe for
// concurrent readers of one State.
func (s *State) link() *links {
	s.linkOnce.Do(func() { s.links = newLinks(s.vertices) })
	return s.links
}

func newLinks(vs []*VertexState) *links {
	l := &links{index: make(map[string]int, len(vs)), from: make([]int32, len(vs)+1)}
	edges := 0
	for i, v := range vs {
		l.index[v.Def.ID] = i
		edges += len(v.Def.DependsOn)
	}
	// Counted, then filled in declaration order, so each vertex's
	// dependents ascend.
	for _, v := range vs {
		for _, dep := range v.Def.DependsOn {
			l.from[l.index[dep]+1]++
		}
	}
	for i := range vs {
		l.from[i+1] += l.from[i]
	}
	l.deps = make([]int32, edges)
	next := slices.Clone(l.from[:len(vs)])
	for i, v := range vs {
		for _, dep := range v.Def.DependsOn {
			d := l.index[dep]
			l.deps[next[d]] = int32(i)
			next[d]++
		}
	}
	return l
}

// dependents returns the indexes of the vertices depending on v.
func (s *State) dependents(v *VertexState) []int32 {
	l := s.link()
	return l.deps[l.from[v.ix.idx]:l.from[v.ix.idx+1]]
}

// decisionIndex is the State's part of the decision index.
type decisionIndex struct {
	stepping    bitSet // vertices that may record a transition or ask
	dispatching bitSet // vertices that may offer a dispatch
	paused      int    // units paused
	open        int    // non-finalizer vertices neither passed, failed nor blocked
	openActive  int    // of those, the ones with a unit holding a position
}

// buildIndex sets up the index of a new State (shape made its vertices):
// pending counts and every vertex's entries.
func (s *State) buildIndex() {
	s.idx = decisionIndex{stepping: newBitSet(len(s.vertices)), dispatching: newBitSet(len(s.vertices))}
	for _, v := range s.vertices {
		v.ix.pending = len(v.Def.DependsOn)
	}
	for _, v := range s.vertices {
		s.refresh(v)
	}
}

// moved updates the index after unit n changed status from old.
func (s *State) moved(n *NodeState, old Status) {
	v := n.v
	if old == StatusPaused {
		s.idx.paused--
	}
	if n.Status == StatusPaused {
		s.idx.paused++
	}
	if holdsPosition(old) {
		v.ix.active--
	}
	if holdsPosition(n.Status) {
		v.ix.active++
	}
	if n.Instance {
		v.ix.idle.set(n.idx, n.Status == StatusIdle)
	}
	s.refresh(v)
}

func holdsPosition(st Status) bool {
	return st == StatusDispatched || st == StatusStarted || st == StatusPaused
}

// finalStatus returns whether v has passed or failed: the cases of
// VertexState.Status that do not look at the units, so the index reads
// them at every move without a scan.
func finalStatus(v *VertexState) (passed, failed bool) {
	switch {
	case v.Unit != nil:
		return v.Unit.Status == StatusPassed, v.Unit.Status == StatusFailed
	case v.failure != nil:
		return false, true
	case v.Loop != nil:
		return v.Loop.Finished != nil, false
	case v.Expansion == nil:
		return false, false
	}
	passed = v.passed == len(v.Instances)
	return passed, !passed && v.passed+v.failed == len(v.Instances)
}

// refresh brings v's entries up to date after anything about v changed:
// a unit's status, its expansion or loop, its blocked flag or pending
// count. A vertex turning green counts down its dependents' pending;
// one failing for good blocks those that have not begun.
func (s *State) refresh(v *VertexState) {
	passed, failed := finalStatus(v)
	fin := v.Def.Kind == KindFinalizer
	if (passed || failed && v.Def.Kind == KindOptional) && !v.ix.green {
		v.ix.green = true
		for _, j := range s.dependents(v) {
			s.vertices[j].ix.pending--
			s.refresh(s.vertices[j])
		}
	}
	if failed && v.Def.Kind != KindOptional && !v.ix.hard {
		v.ix.hard = true
		for _, j := range s.dependents(v) {
			s.block(s.vertices[j], true)
		}
	}
	open := !fin && !passed && !failed && !v.ix.blocked
	openActive := open && v.ix.active > 0
	s.idx.open += delta(open, v.ix.open)
	s.idx.openActive += delta(openActive, v.ix.openActive)
	v.ix.open, v.ix.openActive = open, openActive

	// ready before the stopped and finalizer rules, which Decide applies.
	mayBegin := fin || v.ix.pending == 0 && !v.ix.blocked
	var step, dispatch bool
	switch {
	case v.Unit != nil:
		dispatch = v.Unit.Status == StatusIdle && mayBegin
	case v.Loop != nil:
		step = v.Loop.Finished == nil && (v.Loop.Started || mayBegin)
		dispatch = v.Loop.Finished == nil && len(v.Loop.Rounds) > 0
	default:
		step = v.Expansion == nil && mayBegin
		dispatch = !v.ix.idle.empty()
	}
	s.idx.stepping.set(v.ix.idx, step)
	s.idx.dispatching.set(v.ix.idx, dispatch)
}

func delta(now, was bool) int {
	switch {
	case now && !was:
		return 1
	case was && !now:
		return -1
	}
	return 0
}

// blockable reports whether v is a vertex that blocking applies to: a
// non-finalizer that has not begun, or a node waiting to be offered again.
func blockable(v *VertexState) bool {
	return v.Def.Kind != KindFinalizer && (!v.started() || v.Unit != nil && v.Unit.Status == StatusIdle)
}

// block marks v blocked, if it is blockable, and the vertices depending on
// it in turn; byDep says a dependency failed for good (else stop_on_error
// stopped the graph). A vertex stop blocked first is marked byDep again
// when a dependency then fails for good: both are true of it, and the
// failure is the cause a person can act on.
func (s *State) block(v *VertexState, byDep bool) {
	work := []*VertexState{v}
	for len(work) > 0 {
		v, work = work[len(work)-1], work[:len(work)-1]
		if v.ix.blocked && (!byDep || v.ix.byDep) || !v.ix.blocked && !blockable(v) {
			continue
		}
		v.ix.byDep = v.ix.byDep || byDep
		if v.ix.blocked {
			for _, j := range s.dependents(v) {
				work = append(work, s.vertices[j])
			}
			continue
		}
		v.ix.blocked = true
		s.refresh(v)
		for _, j := range s.dependents(v) {
			work = append(work, s.vertices[j])
		}
	}
}

// stop records that stop_on_error stopped new dispatches: every vertex
// that has not begun is blocked from now on.
func (s *State) stop() {
	if s.stopped {
		return
	}
	s.stopped = true
	for _, v := range s.vertices {
		s.block(v, false)
	}
}

// settled reports whether every non-finalizer vertex has passed, failed
// or is blocked — or, once stop_on_error stopped the graph, holds no
// position: the finalizer rule.
func (s *State) settled() bool {
	return s.idx.open == 0 || s.stopped && s.idx.openActive == 0
}
