package runview

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/obversa/obversa/host/graph"
	"github.com/obversa/obversa/host/runstate"
)

// Node statuses as views show them: the fold's (graph.Status names) and
// StatusBlocked, which the fold derives and never records.
const (
	StatusIdle       = "idle"       // waits for its dependencies or capacity
	StatusDispatched = "dispatched" // position recorded, attempt not started
	StatusStarted    = "started"    // running
	StatusPaused     = "paused"     // waits for a person
	StatusPassed     = "passed"
	StatusFailed     = "failed"
	// StatusBlocked: a dependency failed for good, so the node never runs.
	StatusBlocked = "blocked"
)

// NodeStatus is a node's status in a fold, blocked included.
func NodeStatus(g *graph.State, n *graph.NodeState) string {
	if n.Status == graph.StatusIdle && g.Blocked(n.Def.ID) {
		return StatusBlocked
	}
	return n.Status.String()
}

// Statuses returns every node's status by id.
func Statuses(g *graph.State) map[string]string {
	out := make(map[string]string, len(g.Nodes()))
	for _, n := range g.Nodes() {
		out[n.Def.ID] = NodeStatus(g, n)
	}
	return out
}

// TailLines is how many lines of a command's stdout and stderr a Node
// keeps.
const TailLines = 20

// Node is one node of a run in detail (`obversa show RUN NODE`).
type Node struct {
	ID      string `json:"id"`
	Kind    string `json:"kind"`
	Lane    string `json:"lane,omitempty"`
	Binding string `json:"binding,omitempty"`
	Status  string `json:"status"`
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
	// Pause is what a paused node waits for.
	Pause *graph.PauseRequest `json:"pause,omitempty"`
	// Approved is the recorded approval decision: "allow", "deny" or "".
	Approved string `json:"approved,omitempty"`
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
	Usage       Usage           `json:"usage"`
}

// Artifact is an artifact of a node: a result, or an engine call's parts,
// too large for an event.
type Artifact struct {
	Digest    string `json:"digest"`
	Size      int64  `json:"size"`
	MediaType string `json:"media_type"`
	Purpose   string `json:"purpose"`
}

// Nodes returns every node of a fold in declaration order.
func Nodes(st *runstate.State, now time.Time) []Node {
	var out []Node
	for _, n := range st.Graph().Nodes() {
		out = append(out, nodeView(st, n, now))
	}
	return out
}

// NodeOf returns one node by id; ok is false for an unknown id.
func NodeOf(st *runstate.State, id string, now time.Time) (Node, bool) {
	n := st.Graph().Node(id)
	if n == nil {
		return Node{}, false
	}
	return nodeView(st, n, now), true
}

func nodeView(st *runstate.State, n *graph.NodeState, now time.Time) Node {
	g := st.Graph()
	v := Node{ID: n.Def.ID, Kind: n.Def.Kind, Lane: n.Def.Lane, Binding: n.Def.Binding, Status: NodeStatus(g, n),
		Position: n.Position, Attempts: n.Attempts, Pause: n.Pause, Approved: n.Approved}
	if p := st.Position(n.Position); p != nil {
		if !p.StartedAt.IsZero() {
			t := p.StartedAt
			v.StartedAt = &t
			end := now
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
			v.Calls = append(v.Calls, Call{Sequence: c.Sequence, Outcome: c.Outcome, FailureKind: c.FailureKind, Effective: eff, Usage: Usage{c.Usage}})
			if a := c.PartsArtifact; a != nil {
				v.Artifacts = append(v.Artifacts, Artifact(*a))
			}
		}
	}
	if u, ok := st.NodeUsageOf(n.Def.ID); ok {
		v.Usage = &Usage{u}
	}
	if f := n.Failure; f != nil && n.Status == graph.StatusFailed {
		v.Failure = &Failure{Code: f.Code, Message: f.Message, FailureKind: f.FailureKind, Position: f.Position}
	}
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
