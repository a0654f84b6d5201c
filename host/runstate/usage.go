package runstate

import (
	"encoding/json"
	"fmt"
	"iter"
	"slices"
	"time"

	"github.com/obversa/obversa/host/graph"
	"github.com/obversa/obversa/plugin"
	"github.com/obversa/obversa/store"
)

// Totals is a sum of token usage over engine calls: the counts of the
// calls that measured their usage, and how many did not. Unknown usage is
// never read as zero: an unmeasured call adds to UnmeasuredCalls only
// (docs/decisions.md, "Usage and budgets").
type Totals struct {
	Input           int64 `json:"input"`
	Output          int64 `json:"output"`
	CacheRead       int64 `json:"cache_read"`
	CacheCreation   int64 `json:"cache_creation"`
	UnmeasuredCalls int   `json:"unmeasured_calls"`
}

// add counts one call's usage.
func (t *Totals) add(u plugin.Usage) {
	if !u.Known {
		t.UnmeasuredCalls++
		return
	}
	t.Input = addCount(t.Input, u.Input)
	t.Output = addCount(t.Output, u.Output)
	t.CacheRead = addCount(t.CacheRead, u.CacheRead)
	t.CacheCreation = addCount(t.CacheCreation, u.CacheCreation)
}

// addCount adds two token counts, stopping at plugin.MaxUsageCount: a
// total is recorded (graph:run-finished, graph:run-waiting, the preflight
// report), and the record holds integers exactly only up to 2^53 − 1. A
// total there is "at least" that many, which passes every budget.
func addCount(a, b int64) int64 {
	if a > plugin.MaxUsageCount-b {
		return plugin.MaxUsageCount
	}
	return a + b
}

// SumUsage adds two usage totals (tokens): unknown once either is
// (unknown is never read as zero); each count stops at
// plugin.MaxUsageCount (addCount).
func SumUsage(a, b plugin.Usage) plugin.Usage {
	if !a.Known || !b.Known {
		return plugin.Usage{}
	}
	return plugin.Usage{Known: true, Input: addCount(a.Input, b.Input), Output: addCount(a.Output, b.Output),
		CacheRead: addCount(a.CacheRead, b.CacheRead), CacheCreation: addCount(a.CacheCreation, b.CacheCreation)}
}

// RunUsage is the usage of a run's nodes: the totals over every recorded
// engine call, and per lane. Preflight's live probes are not in it (they
// are the preflight report's). graph:run-finished and graph:run-waiting
// carry it.
type RunUsage struct {
	Totals
	Lanes map[string]Totals `json:"lanes"`
}

func newRunUsage() RunUsage { return RunUsage{Lanes: map[string]Totals{}} }

// add counts one call's usage in the totals and in its lane's.
func (r *RunUsage) add(lane string, u plugin.Usage) {
	r.Totals.add(u)
	t := r.Lanes[lane]
	t.add(u)
	r.Lanes[lane] = t
}

// clone returns a copy that later folding does not change.
func (r RunUsage) clone() *RunUsage {
	c := r
	c.Lanes = make(map[string]Totals, len(r.Lanes))
	for k, v := range r.Lanes {
		c.Lanes[k] = v
	}
	return &c
}

// NodeUsage is one node's usage total.
type NodeUsage struct {
	Node string
	// Usage sums the node's engine calls; Known is false when any of them
	// was unfinished, unreported or failed, or a call is in flight
	// (unknown is never zero).
	Usage plugin.Usage
}

// count folds one recorded engine call of node at position into its
// node's usage and the run's totals, under the lane of the position's
// unit: a plain node, a for_each instance or a loop member (a for_each
// node or a loop is a vertex without a unit of its own).
func (s *State) count(node, position string, u plugin.Usage) {
	lane := ""
	if n := s.graph.AtPosition(position); n != nil {
		lane = n.Def.Lane
	} else if v := s.graph.Vertex(node); v != nil && v.Def != nil {
		lane = v.Def.Lane
	}
	s.totals.add(lane, u)
	if cur, seen := s.usage[node]; seen {
		*cur = SumUsage(*cur, u)
		return
	}
	s.order = append(s.order, nodeTotal{node, &u})
	s.usage[node] = &u
}

// nodeTotal is a node and its usage total, the one usage holds for it:
// Usage lists a run's nodes in order without a lookup each.
type nodeTotal struct {
	node string
	u    *plugin.Usage
}

// inFlightCall reports whether an engine node has a started attempt with
// no result: its current call is unfinished, so its usage is unknown.
func inFlightCall(n *graph.NodeState) bool {
	return n.Def.Lane != "" && n.Status == graph.StatusStarted
}

// Usage returns each node's usage total: the nodes with a recorded engine
// call in the order of their first one, then the engine nodes whose first
// call is in flight, as unknown.
func (s *State) Usage() []NodeUsage {
	return slices.AppendSeq(make([]NodeUsage, 0, len(s.order)), s.Usages())
}

// Usages yields what Usage returns, one node at a time, for a reader
// that keeps none of it: a finished run of many nodes is listed without
// a list of its own first.
func (s *State) Usages() iter.Seq[NodeUsage] {
	return func(yield func(NodeUsage) bool) {
		// With no unit dispatched or started no call is in flight, and
		// each node's total is its recorded one: a finished run of many
		// nodes is read without looking each of them up in the graph.
		busy := s.graph.InFlightCount() > 0
		for _, n := range s.order {
			u := *n.u
			if busy {
				u, _ = s.NodeUsageOf(n.node)
			}
			if !yield(NodeUsage{Node: n.node, Usage: u}) {
				return
			}
		}
		if !busy {
			return
		}
		for _, n := range s.graph.Nodes() {
			if _, seen := s.usage[n.Def.ID]; !seen && inFlightCall(n) {
				if !yield(NodeUsage{Node: n.Def.ID}) {
					return
				}
			}
		}
	}
}

// UsageNodes returns how many nodes have a recorded engine call: as many
// as Usage lists, or fewer while a node's first call is in flight.
func (s *State) UsageNodes() int { return len(s.order) }

// NodeUsageOf returns one node's usage total: unknown while a call of it
// is in flight. ok is false when the node has no engine call, recorded
// or in flight.
func (s *State) NodeUsageOf(node string) (u plugin.Usage, ok bool) {
	if n := s.graph.Node(node); n != nil && inFlightCall(n) {
		return plugin.Usage{}, true
	}
	p, ok := s.usage[node]
	if !ok {
		return plugin.Usage{}, false
	}
	return *p, true
}

// RunUsage returns the usage totals of the recorded engine calls, as
// graph:run-finished carries them; a copy.
func (s *State) RunUsage() *RunUsage { return s.totals.clone() }

// Restarts returns how many workers of the run crashed (run:worker-exited),
// across every watchdog: the restart budget they used (docs/decisions.md,
// "Restart budget").
func (s *State) Restarts() int { return s.crashes }

// PluginDeaths returns how many of the workers Restarts counts stopped
// because a plugin died under an attempt (their exit's code
// PLUGIN_DIED): a plugin is launched again by restarting its worker, so
// its death uses a restart (docs/decisions.md, "Restart budget").
func (s *State) PluginDeaths() int { return s.deaths }

// DiedUnder is how a PLUGIN_DIED exit's message ends: the position whose
// attempt the plugin died under.
func DiedUnder(position string) string { return ", under the attempt at " + position }

// InterruptedCall is the record of the engine call a crash or the run's
// end cut off at n's current position: no identity is known, its usage is
// unknown.
func (s *State) InterruptedCall(n *graph.NodeState) graph.EngineAttemptData {
	return graph.EngineAttemptData{Node: n.Def.ID, Position: n.Position, Sequence: s.Sequence(n.Position) + 1,
		Requested: json.RawMessage("null"), Effective: json.RawMessage("null"),
		Usage: json.RawMessage(`{"known":false}`), Outcome: OutcomeInterrupted}
}

// Totals returns the run's usage totals over the recorded engine calls,
// without the per-lane ones.
func (s *State) Totals() Totals { return s.totals.Totals }

// Aborted returns the events that end every position still in flight when
// the run ends with code (STOPPED, TIMEOUT, …): for an engine call that was
// running, its record with unknown usage (InterruptedCall), then the
// position's graph:node-failed ABORTED. It also returns the run's usage as
// it will be once those are recorded, for the result that follows them in
// the same append (docs/decisions.md, "Status after the end"). cutOff is
// when the positions were cut off, for a run that was interrupted before
// it ended (the time it was last recorded; FailedData.CutOffAt), zero for
// one whose end cuts them off now.
func (s *State) Aborted(code string, cutOff time.Time) ([]store.NewEvent, *RunUsage) {
	usage := s.totals.clone()
	var events []store.NewEvent
	for _, n := range s.graph.InFlight() {
		what := "was dispatched and had not started"
		if n.Status == graph.StatusStarted {
			what = "was running"
			if n.Def.Lane != "" {
				events = append(events, store.NewEvent{Type: graph.EventEngineAttempt, Data: s.InterruptedCall(n)})
				usage.add(n.Def.Lane, plugin.Usage{})
			}
		}
		fail := graph.FailedData{Node: n.Def.ID, Position: n.Position, Code: CodeAborted,
			Message: fmt.Sprintf("the run ended (%s) while the attempt %s", code, what)}
		if x := s.exit; x != nil && x.Code == CodePluginDied && x.DiedUnder == n.Position {
			// The worker's last stop was its plugin dying under this
			// attempt: the node's own line says so.
			fail.Message += "; the last worker stopped because " + x.Message
		}
		if !cutOff.IsZero() {
			at := cutOff.UTC()
			fail.CutOffAt = &at
			fail.Message = fmt.Sprintf("the run was interrupted while the attempt %s (last recorded at %s) and ended (%s) later",
				what, at.Format(time.RFC3339), code)
		}
		events = append(events, store.NewEvent{Type: graph.EventNodeFailed, Data: fail})
	}
	return events, usage
}
