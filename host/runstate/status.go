package runstate

import "github.com/obversa/obversa/host/graph"

// UnitStatus is a unit's status with the run's end applied
// (docs/decisions.md, "Status after the end"). The graph's fold leaves a
// unit whose attempt failed idle, waiting for its retry; once the run has
// ended no retry comes, so such a unit failed — ABORTED when the run's
// end cut its attempt off. While the run can still go on (running,
// paused, interrupted) it is idle.
func (s *State) UnitStatus(n *graph.NodeState) graph.Status {
	if n.Status == graph.StatusIdle && n.Failure != nil && s.Ending() != NotEnded {
		return graph.StatusFailed
	}
	return n.Status
}

// VertexStatus is a vertex's status (graph.VertexState.Status) with the
// run's end applied as UnitStatus does: once the run has ended, a node,
// for_each node or loop that did not pass or fail but holds a unit that
// failed (UnitStatus) failed.
func (s *State) VertexStatus(v *graph.VertexState) graph.Status {
	st := v.Status()
	if s.Ending() == NotEnded || st == graph.StatusPassed || st == graph.StatusFailed {
		return st
	}
	units := v.Instances
	switch {
	case v.Unit != nil:
		return s.UnitStatus(v.Unit)
	case v.Loop != nil && v.Loop.Current() != nil:
		units = v.Loop.Current().Members
	}
	for _, u := range units {
		if s.UnitStatus(u) == graph.StatusFailed {
			return graph.StatusFailed
		}
	}
	return st
}
