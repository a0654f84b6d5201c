package graph

import (
	"encoding/json"
	"fmt"
)

// Status is a node's state in the fold.
type Status int

// Node statuses. Blocked is derived, never recorded: a node whose
// dependency failed for good (or that stop_on_error stopped) can never run.
const (
	StatusIdle       Status = iota // waiting for its dependencies or capacity
	StatusDispatched               // position recorded, attempt not started
	StatusStarted                  // attempt started, no result recorded
	StatusPaused                   // waiting for a person (approval, reconcile)
	StatusPassed
	StatusFailed // failed for good (no retry left)
)

var statusNames = [...]string{"idle", "dispatched", "started", "paused", "passed", "failed"}

// String returns the lower-case status name.
func (s Status) String() string { return statusNames[s] }

// NodeState is the folded state of one unit of work: a node, one instance
// of a for_each node, or one loop member in one round. Each takes
// positions (attempts) of its own.
type NodeState struct {
	// Def is the definition the unit runs: the node's (an instance's is
	// its for_each node's), or the loop member's.
	Def *NodeDef
	// Vertex is the id of the graph vertex the unit belongs to: the node,
	// the for_each node or the loop.
	Vertex string
	// Instance is set for a for_each instance; Key is its key.
	Instance bool
	Key      string
	// Loop and Round name a loop member's loop and round; "" and 0
	// otherwise.
	Loop  string
	Round int
	// Status is the current status.
	Status Status
	// Attempts is how many positions the unit has used.
	Attempts int
	// Position is the current (or last) position.
	Position string
	// RetrySafe is the value saved in the last attempt-started event.
	RetrySafe bool
	// AttemptStarted reports whether the current position has a recorded
	// attempt-started.
	AttemptStarted bool
	// Result is the recorded result of a passed unit.
	Result json.RawMessage
	// ResultArtifact references a result stored as an artifact.
	ResultArtifact *ArtifactRef
	// Failure is the last recorded failure.
	Failure *FailedData
	// Pause is the request of a paused unit.
	Pause *PauseRequest
	// Approved is the recorded approval decision for the current position:
	// "", DecisionAllow or DecisionDeny.
	Approved string
	// Decision is the action policy's recorded decision for the current
	// offer of the position; nil when it has not been asked (or is to be
	// asked again: a resume answered its wait).
	Decision *ActionDecidedData
	// VerdictFailure is set on a binding review member whose failure is
	// its review's verdict (kind unknown: a non-zero exit), not a failure
	// of the member.
	VerdictFailure bool

	v   *VertexState
	idx int // a for_each instance's index in its node's Instances
}

// Name returns how people call the unit: "<node>", "<node>[<key>]" or
// "<loop>/<round>/<member>".
func (n *NodeState) Name() string {
	switch {
	case n.Loop != "":
		return fmt.Sprintf("%s/%d/%s", n.Loop, n.Round, n.Def.ID)
	case n.Instance:
		return n.Def.ID + "[" + n.Key + "]"
	}
	return n.Def.ID
}

// position returns the unit's k-th position.
func (n *NodeState) position(k int) string {
	switch {
	case n.Loop != "":
		return MemberPosition(n.Loop, n.Round, n.Def.ID, k)
	case n.Instance:
		return InstancePosition(n.Def.ID, n.Key, k)
	}
	return Position(n.Def.ID, k)
}

// active reports whether the unit holds a position open: dispatched,
// started or paused.
func (n *NodeState) active() bool {
	return n.Status == StatusDispatched || n.Status == StatusStarted || n.Status == StatusPaused
}

// VertexState is the folded state of one vertex of the graph: a node (one
// unit), a for_each node (a unit per instance, once expanded) or a loop
// (a unit per member and round).
type VertexState struct {
	Def *NodeDef
	// Unit is a plain node's unit; nil for a for_each node or a loop.
	Unit *NodeState
	// Expansion is a for_each node's recorded graph:node-expanded; nil
	// before.
	Expansion *ExpandedData
	// Instances are a for_each node's units, in key order.
	Instances []*NodeState
	// Loop is a loop's state; nil for nodes.
	Loop *LoopState
	// failure is why a for_each node's expansion or a loop failed.
	failure *FailedData

	passed, failed int // instances passed, failed for good
	ix             vertexIndex
}

// LoopState is a started loop's rounds and end.
type LoopState struct {
	// Started is set by graph:loop-started.
	Started bool
	// Rounds are the rounds begun, the current one last.
	Rounds []*RoundState
	// Finished is the recorded graph:loop-finished; nil while the loop
	// runs.
	Finished *LoopFinishedData
}

// RoundState is one round of a loop.
type RoundState struct {
	Round int
	// Members are the round's units in declaration order.
	Members []*NodeState
	// Condition and Review are the round's recorded checks; nil until
	// recorded.
	Condition *ConditionData
	Review    *ReviewedData
}

// Current returns the round in progress (or the last), nil before the
// first.
func (l *LoopState) Current() *RoundState {
	if len(l.Rounds) == 0 {
		return nil
	}
	return l.Rounds[len(l.Rounds)-1]
}

// Findings returns loop.findings for round: the findings of the last
// failed review before it, as text (ReviewOutcome.FindingsText); "" when
// none failed.
func (l *LoopState) Findings(round int) string {
	for r := min(round-1, len(l.Rounds)); r >= 1; r-- {
		if rv := l.Rounds[r-1].Review; rv != nil && !rv.Accepted {
			return rv.Outcome.FindingsText()
		}
	}
	return ""
}

// Member returns the unit of member id in round r, or nil.
func (l *LoopState) Member(r int, id string) *NodeState {
	if r < 1 || r > len(l.Rounds) {
		return nil
	}
	for _, m := range l.Rounds[r-1].Members {
		if m.Def.ID == id {
			return m
		}
	}
	return nil
}

// Status returns the vertex's status: a node's unit's; for a for_each
// node idle until expanded, then passed once every instance passed,
// failed once every instance settled and one failed (or the expansion
// failed), else started (paused when a paused instance is all that
// holds it); for a loop idle until started, passed or failed once
// finished, else started (or paused).
func (v *VertexState) Status() Status {
	passed, failed := finalStatus(v)
	switch {
	case v.Unit != nil:
		return v.Unit.Status
	case passed:
		return StatusPassed
	case failed:
		return StatusFailed
	case v.Loop != nil && !v.Loop.Started, v.Def.ForEach != nil && v.Expansion == nil:
		return StatusIdle
	}
	paused := false
	for _, u := range v.units() {
		switch u.Status {
		case StatusDispatched, StatusStarted:
			return StatusStarted
		case StatusPaused:
			paused = true
		}
	}
	if paused {
		return StatusPaused
	}
	return StatusStarted
}

// Failure returns why the vertex failed: a node's last failure, a for_each
// node's failed expansion or its first instance that failed for good, a
// loop's end; nil when none is recorded.
func (v *VertexState) Failure() *FailedData {
	switch {
	case v.Unit != nil:
		return v.Unit.Failure
	case v.failure != nil:
		return v.failure
	}
	for _, u := range v.Instances {
		if u.Status == StatusFailed {
			return u.Failure
		}
	}
	return nil
}

// units returns the vertex's units that may still move: a node's unit, a
// for_each node's instances, a loop's current round's members.
func (v *VertexState) units() []*NodeState {
	switch {
	case v.Unit != nil:
		return []*NodeState{v.Unit}
	case v.Loop != nil:
		if r := v.Loop.Current(); r != nil {
			return r.Members
		}
		return nil
	}
	return v.Instances
}

// started reports whether the vertex has begun: a node with a position, an
// expanded for_each node, a started loop.
func (v *VertexState) started() bool {
	switch {
	case v.Unit != nil:
		return v.Unit.Status != StatusIdle || v.Unit.Attempts > 0
	case v.Loop != nil:
		return v.Loop.Started
	}
	return v.Expansion != nil
}

// State is the graph state folded from the record. It is incremental: the
// executor keeps one State and applies each new event once.
type State struct {
	def      *Definition
	vertices []*VertexState
	vindex   map[string]int
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
	i, ok := s.vindex[id]
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
