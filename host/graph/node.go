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
