package runview

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/obversa/obversa/host/graph"
	"github.com/obversa/obversa/host/runstate"
	"github.com/obversa/obversa/plugin"
)

// TailLines is how many lines of a command's stdout and stderr a Node
// keeps.
const TailLines = 20

// Node is one node of a run in detail (`obversa show RUN NODE`): a node,
// a for_each instance or a loop member in one round (a unit), or a
// for_each node or a loop as a whole (a group: ForEach or Loop is set).
type Node struct {
	// ID is how people call it: the node's id, "<node>[<key>]" for a
	// for_each instance, "<loop>/<round>/<member>" for a loop member.
	ID string `json:"id"`
	// Group is the for_each node or loop a unit belongs to; Key is an
	// instance's key, Round a member's round.
	Group string `json:"group,omitempty"`
	Key   string `json:"key,omitempty"`
	Round int    `json:"round,omitempty"`
	// Loop and ForEach say where a group stands.
	Loop    *Loop    `json:"loop,omitempty"`
	ForEach *ForEach `json:"for_each,omitempty"`
	Kind    string   `json:"kind"`
	Lane    string   `json:"lane,omitempty"`
	Binding string   `json:"binding,omitempty"`
	Status  string   `json:"status"`
	// Position is the node's current (or last) position, "" before its
	// first dispatch.
	Position string `json:"position,omitempty"`
	// Attempts counts the positions the node used (1 + its retries).
	Attempts int `json:"attempts"`
	// StartedAt and SettledAt are the commit times of the current
	// position's attempt-started and result; ElapsedMS runs between them
	// (to now while it runs).
	StartedAt *time.Time `json:"started_at,omitempty"`
	SettledAt *time.Time `json:"settled_at,omitempty"`
	ElapsedMS int64      `json:"elapsed_ms,omitempty"`
	// Text is an engine node's final text.
	Text string `json:"text,omitempty"`
	// Result is the recorded result when it is not plain text (a
	// structured answer, a binding's output).
	Result json.RawMessage `json:"result,omitempty"`
	// ExitCode, Stdout and Stderr are a command's, when the result has
	// them (cmd-engine's output); Stdout and Stderr keep their last
	// TailLines lines.
	ExitCode *int   `json:"exit_code,omitempty"`
	Stdout   string `json:"stdout,omitempty"`
	Stderr   string `json:"stderr,omitempty"`
	// Failure is the last recorded failure.
	Failure *Failure `json:"failure,omitempty"`
	// Blocked says why a blocked node never runs: BLOCKED when a
	// dependency failed for good, STOPPED_ON_ERROR when stop_on_error
	// stopped new dispatches (runstate.UnfinishedError); nil unless
	// Status is blocked.
	Blocked *runstate.NodeError `json:"blocked,omitempty"`
	// Pause is what a paused node waits for; nil unless Status is
	// paused.
	Pause *graph.PauseRequest `json:"pause,omitempty"`
	// Approved is the recorded approval decision: "allow", "deny" or "".
	Approved string `json:"approved,omitempty"`
	// Review is the verdict a loop's review member gave in its round,
	// once recorded; nil for any other node. A review member that ran
	// and answered fail has passed as a node: Review says its round was
	// rejected.
	Review *Review `json:"review,omitempty"`
	// Usage sums the node's engine calls (unknown when one did not
	// report); nil for a node with no engine call.
	Usage *Usage `json:"usage,omitempty"`
	// Calls are the current position's engine calls.
	Calls []Call `json:"calls,omitempty"`
	// Artifacts are what the record keeps of the node outside its events.
	Artifacts []Artifact `json:"artifacts,omitempty"`
}

// Failure is why a node failed.
type Failure struct {
	Code        string `json:"code"`
	Message     string `json:"message"`
	FailureKind string `json:"failure_kind,omitempty"`
	Position    string `json:"position"`
}

// Call is one engine call of a position.
type Call struct {
	Sequence    int             `json:"sequence"`
	Outcome     string          `json:"outcome"`
	FailureKind string          `json:"failure_kind,omitempty"`
	Effective   json.RawMessage `json:"effective,omitempty"`
	// Substituted is true when the engine answered as an identity that is
	// neither the target the call was sent to nor one of its lane's
	// known_substitutions: the result is kept (the work is done and
	// recorded), and this says so (docs/decisions.md, "A substitution
	// at call time").
	Substituted bool  `json:"substituted,omitempty"`
	Usage       Usage `json:"usage"`
}

// Artifact is an artifact of a node: a result, or an engine call's parts,
// too large for an event.
type Artifact struct {
	Digest    string `json:"digest"`
	Size      int64  `json:"size"`
	MediaType string `json:"media_type"`
	Purpose   string `json:"purpose"`
}

// Nodes returns every node of a fold in declaration order; a for_each
// node or a loop as a group, followed by its units: the instances in key
// order, the members round by round. held says whether a live process
// holds the run, as the reader found it (NodeStatus).
func Nodes(st *runstate.State, now time.Time, held bool) []Node {
	g := st.Graph()
	var out []Node
	for _, v := range g.Vertices() {
		if v.Unit != nil {
			out = append(out, nodeView(st, v.Unit, now, held))
			continue
		}
		out = append(out, groupView(st, v, held))
		units := v.Instances
		if v.Loop != nil {
			units = nil
			for _, r := range v.Loop.Rounds {
				units = append(units, r.Members...)
			}
		}
		for _, u := range units {
			out = append(out, nodeView(st, u, now, held))
		}
	}
	return out
}

// NodeOf returns one node, group or unit by how people call it (see
// Node.ID); ok is false for a name the run does not know. held says
// whether a live process holds the run, as the reader found it
// (NodeStatus).
func NodeOf(st *runstate.State, name string, now time.Time, held bool) (Node, bool) {
	g := st.Graph()
	if v := g.Vertex(name); v != nil && v.Unit == nil {
		return groupView(st, v, held), true
	}
	n := Unit(g, name)
	if n == nil {
		return Node{}, false
	}
	return nodeView(st, n, now, held), true
}

// groupView is a for_each node or a loop as a whole.
func groupView(st *runstate.State, v *graph.VertexState, held bool) Node {
	out := Node{ID: v.Def.ID, Kind: v.Def.Kind, Lane: v.Def.Lane, Binding: v.Def.Binding, Status: VertexStatus(st, v, held)}
	switch {
	case v.Loop != nil:
		l := loopView(st, v, held)
		out.Loop = &l
	case v.Def.ForEach != nil:
		e := forEachView(st, v, held)
		out.ForEach = &e
		if u, ok := st.NodeUsageOf(v.Def.ID); ok {
			out.Usage = &Usage{u}
		}
	}
	if f := v.Failure(); f != nil && out.Status == StatusFailed {
		out.Failure = &Failure{Code: f.Code, Message: f.Message, FailureKind: f.FailureKind, Position: f.Position}
	}
	out.Blocked = blockedWhy(st, out.Status, v.Def.ID)
	return out
}

// blockedWhy is why a view's node of status status in vertex never runs;
// nil unless it is blocked.
func blockedWhy(st *runstate.State, status, vertex string) *runstate.NodeError {
	if status != StatusBlocked {
		return nil
	}
	e := runstate.UnfinishedError(st.Graph(), vertex)
	return &e
}

// nodeView is unit n in detail at time now.
func nodeView(st *runstate.State, n *graph.NodeState, now time.Time, held bool) Node {
	v := Node{ID: n.Name(), Kind: n.Def.Kind, Lane: n.Def.Lane, Binding: n.Def.Binding, Status: NodeStatus(st, n, held),
		Position: n.Position, Attempts: n.Attempts, Approved: n.Approved}
	if v.Status == StatusPaused {
		v.Pause = n.Pause
	}
	if n.Instance || n.Loop != "" {
		v.Group, v.Key, v.Round = n.Vertex, n.Key, n.Round
	}
	v.Review = reviewOf(st, n)
	if p := st.Position(n.Position); p != nil {
		if !p.StartedAt.IsZero() {
			t := p.StartedAt
			v.StartedAt = &t
			end := clockEnd(st, now, held)
			if !p.SettledAt.IsZero() {
				s := p.SettledAt
				v.SettledAt, end = &s, s
			}
			v.ElapsedMS = end.Sub(t).Milliseconds()
		}
		for _, c := range p.Calls {
			eff := c.Effective
			if string(eff) == "null" {
				eff = nil
			}
			v.Calls = append(v.Calls, Call{Sequence: c.Sequence, Outcome: c.Outcome, FailureKind: c.FailureKind, Effective: eff,
				Substituted: substituted(st, n.Def.Lane, c), Usage: Usage{c.Usage}})
			if a := c.PartsArtifact; a != nil {
				v.Artifacts = append(v.Artifacts, Artifact(*a))
			}
		}
	}
	switch p := st.Position(n.Position); {
	case v.Group == "":
		if u, ok := st.NodeUsageOf(n.Def.ID); ok {
			v.Usage = &Usage{u}
		}
	case p != nil && len(p.Calls) > 0:
		// An instance's or a round's member's own calls: the record sums
		// usage by node id, across instances and rounds.
		u := Usage{}
		u.Known = true
		for _, c := range p.Calls {
			u.Usage = runstate.SumUsage(u.Usage, c.Usage)
		}
		v.Usage = &u
	}
	if f := n.Failure; f != nil && v.Status == StatusFailed {
		v.Failure = &Failure{Code: f.Code, Message: f.Message, FailureKind: f.FailureKind, Position: f.Position}
	}
	v.Blocked = blockedWhy(st, v.Status, n.Vertex)
	if n.Status == graph.StatusPassed {
		v.SetResult(n.Result)
		if a := n.ResultArtifact; a != nil {
			v.Artifacts = append(v.Artifacts, Artifact(*a))
		}
	}
	return v
}

// SetResult shows a passed node's result as text (a JSON string), as a
// command's output (an object with exit_code and stdout or stderr), or as
// it is. A reader that loaded a result kept as an artifact calls it with
// the artifact's bytes.
func (v *Node) SetResult(r json.RawMessage) {
	if len(r) == 0 || string(r) == "null" {
		return
	}
	var text string
	if json.Unmarshal(r, &text) == nil {
		v.Text = text
		return
	}
	var cmd struct {
		ExitCode *int    `json:"exit_code"`
		Stdout   *string `json:"stdout"`
		Stderr   *string `json:"stderr"`
	}
	if json.Unmarshal(r, &cmd) == nil && cmd.ExitCode != nil && (cmd.Stdout != nil || cmd.Stderr != nil) {
		v.ExitCode = cmd.ExitCode
		if cmd.Stdout != nil {
			v.Stdout = Tail(*cmd.Stdout, TailLines)
		}
		if cmd.Stderr != nil {
			v.Stderr = Tail(*cmd.Stderr, TailLines)
		}
		return
	}
	v.Result = r
}

// Tail returns the last n lines of s.
func Tail(s string, n int) string {
	s = strings.TrimRight(s, "\n")
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// substituted reports whether call c of a node of lane was answered as an
// identity its lane does not allow (runstate.LaneAllows): not the target
// it was sent to, nor one of the lane's known_substitutions. A call with
// no recorded answer, or a lane the plan does not name, is not.
func substituted(st *runstate.State, lane string, c runstate.EngineCall) bool {
	var req, eff plugin.Identity
	if len(c.Effective) == 0 || string(c.Effective) == "null" || json.Unmarshal(c.Requested, &req) != nil || json.Unmarshal(c.Effective, &eff) != nil {
		return false
	}
	lp, ok := st.Start().Plan.Lane(lane)
	if !ok {
		return false
	}
	// The parts an answer leaves empty are the target's, as for a selection.
	return !runstate.LaneAllows(lp.KnownSubstitutions, req, eff.Or(req))
}
