package graph

import (
	"encoding/json"
	"fmt"
	"slices"
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

// NodeState is the folded state of one node.
type NodeState struct {
	Def *NodeDef
	// Status is the current status.
	Status Status
	// Attempts is how many positions the node has used.
	Attempts int
	// Position is the current (or last) position.
	Position string
	// RetrySafe is the value saved in the last attempt-started event.
	RetrySafe bool
	// AttemptStarted reports whether the current position has a recorded
	// attempt-started.
	AttemptStarted bool
	// Result is the recorded result of a passed node.
	Result json.RawMessage
	// ResultArtifact references a result stored as an artifact.
	ResultArtifact *ArtifactRef
	// Failure is the last recorded failure.
	Failure *FailedData
	// Pause is the request of a paused node.
	Pause *PauseRequest
	// Approved is the recorded approval decision for the current position:
	// "", DecisionAllow or DecisionDeny.
	Approved string
	// Decision is the action policy's recorded decision for the current
	// offer of the position; nil when it has not been asked (or is to be
	// asked again: a resume answered its wait).
	Decision *ActionDecidedData
}

// State is the graph state folded from the record. It is incremental: the
// executor keeps one State and applies each new event once.
type State struct {
	def      *Definition
	nodes    []*NodeState
	index    map[string]int
	inflight int
	// dispatched counts every recorded dispatch (positions used).
	dispatched int
	keyed      map[string]int
	keyLimit   map[string]int
	// stopped is set once a required node failed for good under
	// stop_on_error.
	stopped bool
	// The dispatch index (next.go): dependency and dependent indexes,
	// and what keeps Next from scanning every node at every decision.
	ready readyIndex
}

// New returns the initial state of a validated definition.
func New(def *Definition) (*State, error) {
	if err := def.Validate(); err != nil {
		return nil, err
	}
	s := &State{def: def, index: map[string]int{}, keyed: map[string]int{}, keyLimit: map[string]int{}}
	for i := range def.Nodes {
		s.nodes = append(s.nodes, &NodeState{Def: &def.Nodes[i]})
		s.index[def.Nodes[i].ID] = i
	}
	for _, k := range def.KeyedConcurrency {
		s.keyLimit[k.Key] = k.Limit
	}
	s.ready.build(s)
	return s, nil
}

// Definition returns the definition the state folds.
func (s *State) Definition() *Definition { return s.def }

// Node returns the state of a node, or nil for an unknown id.
func (s *State) Node(id string) *NodeState {
	i, ok := s.index[id]
	if !ok {
		return nil
	}
	return s.nodes[i]
}

// Nodes returns every node state in declaration order.
func (s *State) Nodes() []*NodeState { return s.nodes }

// Dispatched returns how many positions the record has dispatched, across
// every worker (what limits.max_dispatches counts).
func (s *State) Dispatched() int { return s.dispatched }

// InFlight returns the nodes with a recorded position and no result:
// dispatched or started.
func (s *State) InFlight() []*NodeState {
	var out []*NodeState
	for _, n := range s.nodes {
		if n.Status == StatusDispatched || n.Status == StatusStarted {
			out = append(out, n)
		}
	}
	return out
}

// Results returns the recorded results of every passed node, by id. Nodes
// whose result is an artifact are left out; the executor loads those.
func (s *State) Results() map[string]json.RawMessage {
	out := map[string]json.RawMessage{}
	for _, n := range s.nodes {
		if n.Status == StatusPassed && n.Result != nil {
			out[n.Def.ID] = n.Result
		}
	}
	return out
}

// Apply folds one recorded event: Decode, then ApplyData. Events the graph
// does not own are ignored. A dispatch that differs from what Next decides
// at this prefix, or an event about a position that is not in the expected
// state, returns an error wrapping ErrInvalidEvent.
func (s *State) Apply(typ string, data json.RawMessage) error {
	v, ok, err := Decode(typ, data)
	if err != nil || !ok {
		return err
	}
	return s.ApplyData(v)
}

// Decode returns the typed data of a graph event (a DispatchedData,
// AttemptStartedData, CompletedData, FailedData, PausedData, ResumedData,
// ApprovalData or ActionDecidedData value) and true; false for an event the graph does not
// fold. Data that does not decode is an error wrapping ErrInvalidEvent.
func Decode(typ string, data json.RawMessage) (any, bool, error) {
	var v any
	var err error
	switch typ {
	case EventNodeDispatched:
		v, err = decodeAs[DispatchedData](data)
	case EventAttemptStarted:
		v, err = decodeAs[AttemptStartedData](data)
	case EventNodeCompleted:
		v, err = decodeAs[CompletedData](data)
	case EventNodeFailed:
		v, err = decodeAs[FailedData](data)
	case EventNodePaused:
		v, err = decodeAs[PausedData](data)
	case EventNodeResumed:
		v, err = decodeAs[ResumedData](data)
	case EventApproval:
		v, err = decodeAs[ApprovalData](data)
	case EventActionDecided:
		v, err = decodeAs[ActionDecidedData](data)
	default:
		return nil, false, nil
	}
	return v, err == nil, err
}

func decodeAs[T any](data json.RawMessage) (T, error) {
	var v T
	err := strictUnmarshal(data, &v)
	return v, err
}

// ApplyData folds the typed data of one graph event (as Decode returns
// it, or as the executor built it before recording it); a value of any
// other type is ignored. Errors as Apply.
func (s *State) ApplyData(v any) error {
	switch d := v.(type) {
	case DispatchedData:
		return s.applyDispatch(d.Dispatches)
	case AttemptStartedData:
		n, err := s.at(d.Node, d.Position, StatusDispatched)
		if err != nil {
			return err
		}
		n.Status, n.RetrySafe, n.AttemptStarted = StatusStarted, d.RetrySafe, true
	case CompletedData:
		n, err := s.at(d.Node, d.Position, StatusStarted, StatusPaused)
		if err != nil {
			return err
		}
		s.leave(n)
		n.Status, n.Result, n.ResultArtifact, n.Pause = StatusPassed, d.Result, d.ResultArtifact, nil
		s.ready.settled(s, n)
	case FailedData:
		n, err := s.at(d.Node, d.Position, StatusDispatched, StatusStarted, StatusPaused)
		if err != nil {
			return err
		}
		s.leave(n)
		n.Failure, n.Pause = &d, nil
		s.settleFailure(n)
	case PausedData:
		n, err := s.at(d.Node, d.Position, StatusDispatched, StatusStarted)
		if err != nil {
			return err
		}
		s.leave(n)
		req := d.Request
		n.Status, n.Pause = StatusPaused, &req
	case ResumedData:
		n, err := s.at(d.Node, d.Position, StatusPaused, StatusStarted)
		if err != nil {
			return err
		}
		if n.Status == StatusPaused {
			s.enter(n)
			if n.Pause != nil && n.Pause.Kind == PauseApproval {
				// The wait is answered: the policies are asked again
				// (unless a person decided, which Approved keeps).
				n.Decision = nil
			}
		}
		n.Status, n.Pause, n.AttemptStarted = StatusDispatched, nil, false
	case ApprovalData:
		n := s.AtPosition(d.Position)
		if n == nil || n.Status != StatusPaused || n.Pause == nil || n.Pause.Kind != PauseApproval {
			return fmt.Errorf("%w: approval for %q, which does not wait for approval", ErrInvalidEvent, d.Position)
		}
		if d.Decision != DecisionAllow && d.Decision != DecisionDeny {
			return fmt.Errorf("%w: approval decision %q for %q is neither %q nor %q", ErrInvalidEvent, d.Decision, d.Position, DecisionAllow, DecisionDeny)
		}
		if n.Approved != "" {
			return fmt.Errorf("%w: position %q already has a decision (%s)", ErrInvalidEvent, d.Position, n.Approved)
		}
		n.Approved = d.Decision
	case ActionDecidedData:
		n, err := s.at(d.Node, d.Position, StatusDispatched)
		if err != nil {
			return err
		}
		if d.Verdict != VerdictAllow && d.Verdict != VerdictWait && d.Verdict != VerdictDeny {
			return fmt.Errorf("%w: verdict %q for %q is not allow, wait or deny", ErrInvalidEvent, d.Verdict, d.Position)
		}
		n.Decision = &d
	}
	return nil
}

// AtPosition returns the node whose current position is position, or nil.
func (s *State) AtPosition(position string) *NodeState {
	for _, n := range s.nodes {
		if n.Position == position {
			return n
		}
	}
	return nil
}

func strictUnmarshal(data json.RawMessage, v any) error {
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidEvent, err)
	}
	return nil
}

// at finds the node named by an event and checks its position and status.
func (s *State) at(id, position string, want ...Status) (*NodeState, error) {
	n := s.Node(id)
	if n == nil {
		return nil, fmt.Errorf("%w: unknown node %q", ErrInvalidEvent, id)
	}
	if n.Position != position {
		return nil, fmt.Errorf("%w: node %q is at position %q, event names %q", ErrInvalidEvent, id, n.Position, position)
	}
	if !slices.Contains(want, n.Status) {
		return nil, fmt.Errorf("%w: position %q is %s", ErrInvalidEvent, position, n.Status)
	}
	return n, nil
}

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

// final are failure codes no retry can change: the same input, plan or
// policy would fail the same way.
var final = map[string]bool{
	"DENIED": true, "INPUT_RENDER": true, "ENGINE_IDENTITY_UNRESOLVED": true,
	"ENGINE_UNAVAILABLE": true, "RESULT_TOO_LARGE": true, "KNOWN_SECRET": true,
}

// finalKinds are engine failure kinds no retry can change.
var finalKinds = map[string]bool{"invalid_config": true, "missing_cli": true, "auth": true, "billing": true}

// settleFailure decides whether a failed position is offered again: only a
// required node, only while attempts ≤ retry_cap_per_node and stop_on_error
// is false, and never after a failure no retry can change (a denial, a
// template that cannot render, a refused result, a dead lane, bad
// configuration).
func (s *State) settleFailure(n *NodeState) {
	stuck := n.Failure != nil && (final[n.Failure.Code] || finalKinds[n.Failure.FailureKind])
	if n.Def.Kind == KindRequired && !stuck && !s.def.StopOnError && n.Attempts <= s.def.RetryCapPerNode {
		n.Status = StatusIdle
		s.ready.idle(s, n)
		return
	}
	n.Status = StatusFailed
	if n.Def.Kind == KindRequired && s.def.StopOnError {
		s.stopped = true
	}
	s.ready.settled(s, n)
}

func (s *State) applyDispatch(recorded []Dispatch) error {
	want, _ := s.Next()
	if len(recorded) == 0 || !slices.Equal(want, recorded) {
		return fmt.Errorf("%w: recorded dispatch %v differs from the graph's decision %v", ErrInvalidEvent, recorded, want)
	}
	s.dispatched += len(recorded)
	for _, d := range recorded {
		n := s.Node(d.Node)
		n.Attempts++
		n.Position, n.Status, n.AttemptStarted, n.Approved, n.Decision = d.Position, StatusDispatched, false, "", nil
		s.ready.dispatched(s, n)
		s.enter(n)
	}
	return nil
}

// NodeEvent reports whether typ is one of the events Decode reads: those
// that change a node's state.
func NodeEvent(typ string) bool {
	switch typ {
	case EventNodeDispatched, EventAttemptStarted, EventNodeCompleted, EventNodeFailed,
		EventNodePaused, EventNodeResumed, EventApproval, EventActionDecided:
		return true
	}
	return false
}
