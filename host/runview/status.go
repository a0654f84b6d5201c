package runview

import (
	"time"

	"github.com/obversa/obversa/host/graph"
	"github.com/obversa/obversa/host/runstate"
)

// Node statuses as views show them: the fold's (graph.Status names), and
// StatusBlocked, StatusSkipped and StatusStopped, which views derive and
// the record never holds.
const (
	StatusIdle       = "idle"       // waits for its dependencies or capacity, while the run can go on
	StatusDispatched = "dispatched" // position recorded, attempt not started
	StatusStarted    = "started"    // running
	StatusPaused     = "paused"     // waits for a person
	StatusPassed     = "passed"
	StatusFailed     = "failed"
	// StatusInterrupted: the unit's attempt started and the run stopped
	// being carried on before its result (paused, or interrupted: no
	// live process holds it; runstate.State.Halted): the attempt was cut
	// off then and runs no more. Whoever carries the run on applies the
	// crash table to it (retried if retry_safe, else paused for
	// reconciliation; docs/architecture.md#the-executor).
	StatusInterrupted = "interrupted"
	// StatusBlocked: a dependency failed for good, or stop_on_error
	// stopped new dispatches, so the node never runs (Node.Blocked says
	// which).
	StatusBlocked = "blocked"
	// StatusSkipped: the run ended (completed, failed or stopped) before
	// the node was dispatched, or while it waited for approval, so it
	// never runs; the run's result says why (docs/decisions.md, "Status
	// after the end").
	StatusSkipped = "skipped"
	// StatusStopped: the run ended (stopped, timed out, failed) while the
	// unit waited for a person to reconcile its attempt: nothing is
	// pending (an ended run cannot be resumed), and the attempt may or may
	// not have taken effect, so it is neither paused nor skipped
	// (docs/decisions.md, "Status after the end").
	StatusStopped = "stopped"
)

// NodeStatus is a unit's status in a fold (a node, a for_each instance, a
// loop member in a round): the fold's with the run's end applied
// (runstate.State.UnitStatus: a unit whose attempt failed waits for its
// retry while the run goes on, and failed once it ended), or blocked, or
// skipped (idleStatus, unitStatus). held says whether a live process
// holds the run, as the reader found it: a started unit of a run nothing
// carries on (runstate.State.Halted) is interrupted.
func NodeStatus(st *runstate.State, n *graph.NodeState, held bool) string {
	s := unitStatus(st, n)
	if _, halted := st.Halted(held); halted && s == graph.StatusStarted {
		return StatusInterrupted
	}
	return idleStatus(st, s, n.Vertex)
}

// clockEnd is when the clock of a position that started and has no
// result stops: when the run was last carried on if nothing carries it
// on (runstate.State.Halted: held as NodeStatus takes it), else now.
func clockEnd(st *runstate.State, now time.Time, held bool) time.Time {
	if at, halted := st.Halted(held); halted {
		return at
	}
	return now
}

// unitStatus is unit n's status in the fold with the run's end applied
// (runstate.State.UnitStatus), where a unit left waiting for approval
// when the run ended is idle: an approval pause comes before the
// attempt, so it never ran, and no answer comes once the run has ended.
// A reconcile-attempt pause stays paused here, and views show it stopped
// (idleStatus): its attempt may have run, and only a person can tell
// (docs/decisions.md, "Status after the end").
func unitStatus(st *runstate.State, n *graph.NodeState) graph.Status {
	s := st.UnitStatus(n)
	if s == graph.StatusPaused && n.Pause != nil && n.Pause.Kind == graph.PauseApproval && st.Ending() != runstate.NotEnded {
		return graph.StatusIdle
	}
	return s
}

// idleStatus names status s of vertex as views show it: a paused one is
// stopped once the run has ended (nothing answers it); an idle one is
// blocked when a dependency failed for good, else skipped once the run
// has ended (no dispatch comes), else idle; any other is the fold's.
func idleStatus(st *runstate.State, s graph.Status, vertex string) string {
	switch {
	case s == graph.StatusPaused && st.Ending() != runstate.NotEnded:
		// Only a reconcile pause is left paused (unitStatus).
		return StatusStopped
	case s != graph.StatusIdle:
		return s.String()
	case st.Graph().Blocked(vertex):
		return StatusBlocked
	case st.Ending() != runstate.NotEnded:
		return StatusSkipped
	}
	return StatusIdle
}

// Statuses returns every node's status by id, as `obversa graph RUN`
// colours them: a for_each node's and a loop's over their units
// (VertexStatus), a loop member's in the loop's current round; held as
// NodeStatus takes it.
func Statuses(st *runstate.State, held bool) map[string]string {
	g := st.Graph()
	out := make(map[string]string, len(g.Vertices()))
	for _, v := range g.Vertices() {
		out[v.Def.ID] = VertexStatus(st, v, held)
		if v.Loop == nil {
			continue
		}
		if r := v.Loop.Current(); r != nil {
			for _, m := range r.Members {
				out[m.Def.ID] = NodeStatus(st, m, held)
			}
		}
	}
	return out
}

// Streams reports whether id names a node whose attempts stream.jsonl
// lines name (stream.Line.Node): a node or a for_each node (its
// instances' lines name it), or a loop's member.
func Streams(g *graph.State, id string) bool {
	for _, v := range g.Vertices() {
		switch {
		case v.Def.ID == id:
			return v.Loop == nil
		case v.Def.Loop != nil && v.Def.Loop.Member(id) != nil:
			return true
		}
	}
	return false
}

// Unit returns the unit people call name — a node id, "<node>[<key>]"
// for a for_each instance, "<loop>/<round>/<member>" for a loop member
// (graph.NodeState.Name) — or nil.
func Unit(g *graph.State, name string) *graph.NodeState {
	if n := g.Node(name); n != nil {
		return n
	}
	for _, n := range g.Nodes() {
		if n.Name() == name {
			return n
		}
	}
	return nil
}

// ResultArtifact returns the artifact holding the result of the passed
// unit people call name (Unit), nil when the unit has none or its result
// is recorded inline: a reader loads it and calls Node.SetResult.
func ResultArtifact(g *graph.State, name string) *graph.ArtifactRef {
	if n := Unit(g, name); n != nil && n.Status == graph.StatusPassed {
		return n.ResultArtifact
	}
	return nil
}
