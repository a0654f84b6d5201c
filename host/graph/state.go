package graph

import "sync"

// State is the graph state folded from the record. It is incremental: the
// executor keeps one State and applies each new event once.
type State struct {
	def      *Definition
	vertices []*VertexState
	// links finds vertices by id and their dependents; built on first
	// use (State.link).
	linkOnce sync.Once
	links    *links
	// units are every unit in the order they came to be.
	units    []*NodeState
	byPos    map[string]*NodeState
	inflight int
	// dispatched counts every recorded dispatch (positions used).
	dispatched int
	keyed      map[string]int
	keyLimit   map[string]int
	// stopped is set once a required vertex failed for good under
	// stop_on_error (State.stop).
	stopped bool
	idx     decisionIndex
}

// New returns the initial state of a validated definition.
func New(def *Definition) (*State, error) {
	if err := def.Validate(); err != nil {
		return nil, err
	}
	return build(def), nil
}

// Rebuild returns the initial state of def, a definition New already
// accepted (another State was built from it), without validating it
// again; def must not change while either State lives.
func Rebuild(def *Definition) *State { return build(def) }

// build returns the initial state of a definition that passed Validate.
func build(def *Definition) *State {
	s := shape(def)
	s.byPos = map[string]*NodeState{}
	s.buildIndex()
	return s
}

func (s *State) newUnit(u *NodeState) *NodeState {
	s.units = append(s.units, u)
	return u
}

// Definition returns the definition the state folds.
func (s *State) Definition() *Definition { return s.def }

// Node returns the unit of a plain node (not a for_each node or a loop),
// or nil.
func (s *State) Node(id string) *NodeState {
	if v := s.Vertex(id); v != nil {
		return v.Unit
	}
	return nil
}

// Vertex returns the state of a vertex (node, for_each node or loop) by
// id, or nil.
func (s *State) Vertex(id string) *VertexState {
	i, ok := s.link().index[id]
	if !ok {
		return nil
	}
	return s.vertices[i]
}

// Vertices returns every vertex in declaration order.
func (s *State) Vertices() []*VertexState { return s.vertices }

// Nodes returns every unit — nodes, for_each instances, loop members of
// each round begun — in the order they came to be: declared nodes first,
// then instances and members as expansions and rounds were recorded.
func (s *State) Nodes() []*NodeState { return s.units }

// Dispatched returns how many positions the record has dispatched, across
// every worker (what limits.max_dispatches counts).
func (s *State) Dispatched() int { return s.dispatched }

// Paused returns how many units are paused, waiting for a person (an
// approval or a reconcile); kept by the fold, so reading it costs nothing.
func (s *State) Paused() int { return s.idx.paused }

// InFlight returns the units with a recorded position and no result:
// dispatched or started.
func (s *State) InFlight() []*NodeState {
	var out []*NodeState
	for _, n := range s.units {
		if n.Status == StatusDispatched || n.Status == StatusStarted {
			out = append(out, n)
		}
	}
	return out
}

// InFlightCount returns how many units hold a recorded position with no
// result (dispatched or started): InFlight's length, kept by the fold.
func (s *State) InFlightCount() int { return s.inflight }

// AtPosition returns the unit whose current position is position, or nil.
func (s *State) AtPosition(position string) *NodeState {
	if n := s.byPos[position]; n != nil && n.Position == position {
		return n
	}
	return nil
}

// Blocked reports whether a vertex can never begin: a non-finalizer that
// has not begun (or a node waiting to be offered again) whose dependency
// failed for good (and is not optional) or is itself blocked, or any of
// them once stop_on_error stopped new dispatches.
func (s *State) Blocked(id string) bool {
	v := s.Vertex(id)
	return v != nil && v.ix.blocked
}

// DependencyFailed reports whether a blocked vertex is blocked because a
// dependency failed for good (and is not optional) or is itself blocked
// so; false for a vertex that is not blocked, and for one blocked only
// because stop_on_error stopped new dispatches (Stopped).
func (s *State) DependencyFailed(id string) bool {
	v := s.Vertex(id)
	return v != nil && v.ix.blocked && v.ix.byDep
}

// Stopped reports whether stop_on_error stopped new dispatches: a
// required vertex failed for good under it.
func (s *State) Stopped() bool { return s.stopped }

func (s *State) enter(n *NodeState) {
	s.inflight++
	if n.Def.Key != "" {
		s.keyed[n.Def.Key]++
	}
}

func (s *State) leave(n *NodeState) {
	if n.Status != StatusDispatched && n.Status != StatusStarted {
		return
	}
	s.inflight--
	if n.Def.Key != "" {
		s.keyed[n.Def.Key]--
	}
}
