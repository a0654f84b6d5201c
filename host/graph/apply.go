package graph

import (
	"encoding/json"
	"fmt"
	"slices"
)

// Apply folds one recorded event: Decode, then ApplyData. Events the graph
// does not own are ignored. A dispatch or a loop or for_each step that
// differs from what Decide decides at this prefix, or an event about a
// position that is not in the expected state, returns an error wrapping
// ErrInvalidEvent.
func (s *State) Apply(typ string, data json.RawMessage) error {
	v, ok, err := Decode(typ, data)
	if err != nil || !ok {
		return err
	}
	return s.ApplyData(v)
}

// Decode returns the typed data of a graph event (a DispatchedData,
// AttemptStartedData, CompletedData, FailedData, PausedData, ResumedData,
// ApprovalData, ActionDecidedData, ExpandedData, LoopStartedData, RoundStartedData,
// ConditionData, ReviewedData or LoopFinishedData value) and true; false
// for an event the graph does not fold. Data that does not decode is an
// error wrapping ErrInvalidEvent.
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
	case EventNodeExpanded:
		v, err = decodeAs[ExpandedData](data)
	case EventLoopStarted:
		v, err = decodeAs[LoopStartedData](data)
	case EventRoundStarted:
		v, err = decodeAs[RoundStartedData](data)
	case EventLoopCondition:
		v, err = decodeAs[ConditionData](data)
	case EventLoopReviewed:
		v, err = decodeAs[ReviewedData](data)
	case EventLoopFinished:
		v, err = decodeAs[LoopFinishedData](data)
	default:
		return nil, false, nil
	}
	return v, err == nil, err
}

// NodeEvent reports whether typ is one of the events Decode reads: those
// that change the graph's state.
func NodeEvent(typ string) bool {
	switch typ {
	case EventNodeDispatched, EventAttemptStarted, EventNodeCompleted, EventNodeFailed,
		EventNodePaused, EventNodeResumed, EventApproval, EventActionDecided, EventNodeExpanded, EventLoopStarted,
		EventRoundStarted, EventLoopCondition, EventLoopReviewed, EventLoopFinished:
		return true
	}
	return false
}

func decodeAs[T any](data json.RawMessage) (T, error) {
	var v T
	if err := json.Unmarshal(data, &v); err != nil {
		return v, fmt.Errorf("%w: %v", ErrInvalidEvent, err)
	}
	return v, nil
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
		s.moved(n, StatusDispatched)
	case CompletedData:
		n, err := s.at(d.Node, d.Position, StatusStarted, StatusPaused)
		if err != nil {
			return err
		}
		s.leave(n)
		old := n.Status
		n.Status, n.Result, n.ResultArtifact, n.Pause = StatusPassed, d.Result, d.ResultArtifact, nil
		if n.Instance {
			n.v.passed++
		}
		s.moved(n, old)
	case FailedData:
		n, err := s.at(d.Node, d.Position, StatusDispatched, StatusStarted, StatusPaused)
		if err != nil {
			return err
		}
		s.leave(n)
		old := n.Status
		n.Failure, n.Pause = &d, nil
		s.settleFailure(n)
		s.moved(n, old)
	case PausedData:
		n, err := s.at(d.Node, d.Position, StatusDispatched, StatusStarted)
		if err != nil {
			return err
		}
		s.leave(n)
		old, req := n.Status, d.Request
		n.Status, n.Pause = StatusPaused, &req
		s.moved(n, old)
	case ResumedData:
		n, err := s.at(d.Node, d.Position, StatusPaused, StatusStarted)
		if err != nil {
			return err
		}
		old := n.Status
		if n.Status == StatusPaused {
			s.enter(n)
			if n.Pause != nil && n.Pause.Kind == PauseApproval {
				// The wait is answered: the policies are asked again
				// (unless a person decided, which Approved keeps).
				n.Decision = nil
			}
		}
		n.Status, n.Pause, n.AttemptStarted = StatusDispatched, nil, false
		s.moved(n, old)
	case ApprovalData:
		return s.applyApproval(d)
	case ActionDecidedData:
		n, err := s.at(d.Node, d.Position, StatusDispatched)
		if err != nil {
			return err
		}
		if d.Verdict != VerdictAllow && d.Verdict != VerdictWait && d.Verdict != VerdictDeny {
			return fmt.Errorf("%w: verdict %q for %q is not allow, wait or deny", ErrInvalidEvent, d.Verdict, d.Position)
		}
		n.Decision = &d
	default:
		return s.applyStep(v)
	}
	return nil
}

func (s *State) applyApproval(d ApprovalData) error {
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
	return nil
}

// at finds the unit an event names by its position and checks its node
// and status.
func (s *State) at(id, position string, want ...Status) (*NodeState, error) {
	n := s.byPos[position]
	if n == nil {
		if s.Vertex(id) == nil && !s.isMember(id) {
			return nil, fmt.Errorf("%w: unknown node %q", ErrInvalidEvent, id)
		}
		return nil, fmt.Errorf("%w: no position %q was dispatched", ErrInvalidEvent, position)
	}
	if n.Def.ID != id {
		return nil, fmt.Errorf("%w: position %q belongs to node %q, the event names %q", ErrInvalidEvent, position, n.Def.ID, id)
	}
	if n.Position != position {
		return nil, fmt.Errorf("%w: node %q is at position %q, event names %q", ErrInvalidEvent, n.Name(), n.Position, position)
	}
	if !slices.Contains(want, n.Status) {
		return nil, fmt.Errorf("%w: position %q is %s", ErrInvalidEvent, position, n.Status)
	}
	return n, nil
}

// isMember reports whether id is a loop member of the definition.
func (s *State) isMember(id string) bool {
	for _, v := range s.vertices {
		if v.Loop != nil && v.Def.Loop.Member(id) != nil {
			return true
		}
	}
	return false
}

// final are failure codes no retry can change: the same input, plan or
// policy would fail the same way.
var final = map[string]bool{
	"DENIED": true, CodeInputRender: true, "ENGINE_IDENTITY_UNRESOLVED": true,
	"ENGINE_UNAVAILABLE": true, "RESULT_TOO_LARGE": true, "KNOWN_SECRET": true,
}

// effectFailed are the codes of a failed effect (the plugin reported a
// failure that is neither a timeout nor an abort), as spelled now and by
// older records.
var effectFailed = map[string]bool{"EFFECT_FAILED": true, "NODE_FAILED": true}

// finalKinds are engine failure kinds no retry can change.
var finalKinds = map[string]bool{"invalid_config": true, "missing_cli": true, "auth": true, "billing": true}

// settleFailure decides whether a failed position is offered again: only a
// required unit (a node, an instance of a required for_each node, a loop
// member), only while attempts ≤ retry_cap_per_node and stop_on_error is
// false, and never after a failure no retry can change (a denial, a
// template that cannot render, a refused result, a dead lane, bad
// configuration). A binding review member's failure of kind unknown is
// its review's verdict, not a failure of the member (docs/run-file.md,
// "Loops"); records written before EFFECT_FAILED spell it NODE_FAILED.
func (s *State) settleFailure(n *NodeState) {
	f := n.Failure
	if n.Loop != "" && n.Def.ID == n.v.Def.Loop.Review && n.Def.Binding != "" && effectFailed[f.Code] && f.FailureKind == "unknown" {
		n.Status, n.VerdictFailure = StatusFailed, true
		return
	}
	kind := n.v.Def.Kind
	if n.Loop != "" {
		kind = KindRequired
	}
	stuck := final[f.Code] || finalKinds[f.FailureKind]
	if kind == KindRequired && !stuck && !s.def.StopOnError && n.Attempts <= s.def.RetryCapPerNode {
		n.Status = StatusIdle
		return
	}
	n.Status = StatusFailed
	if n.Instance {
		n.v.failed++
	}
	// A loop member's failure fails its loop when the loop ends
	// (graph:loop-finished), which is when stop_on_error applies.
	if n.Loop == "" && kind == KindRequired && s.def.StopOnError {
		s.stop()
	}
}

func (s *State) applyDispatch(recorded []Dispatch) error {
	d := s.Decide()
	var want []Dispatch
	if len(d.Transitions) == 0 && len(d.Asks) == 0 {
		want = d.Dispatches
	}
	// A decision too large for one event is recorded as several, each a
	// prefix of the decision at its point of the record (docs/decisions.md,
	// "A large dispatch decision is recorded in parts").
	if len(recorded) == 0 || len(recorded) > len(want) || !slices.Equal(want[:len(recorded)], recorded) {
		return fmt.Errorf("%w: recorded dispatch %v differs from the graph's decision %v", ErrInvalidEvent, recorded, want)
	}
	s.dispatched += len(recorded)
	for i := range recorded {
		n := d.units[i]
		n.Attempts++
		n.Position, n.Status, n.AttemptStarted, n.Approved, n.Decision = recorded[i].Position, StatusDispatched, false, "", nil
		s.byPos[n.Position] = n
		s.enter(n)
		s.moved(n, StatusIdle)
	}
	return nil
}
