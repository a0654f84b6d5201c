package ui

import (
	"bytes"
	"time"

	"github.com/obversa/obversa/host/diagram"
	"github.com/obversa/obversa/host/graph"
	"github.com/obversa/obversa/host/runstate"
	"github.com/obversa/obversa/host/runview"
	"github.com/obversa/obversa/host/watchdog"
	"github.com/obversa/obversa/internal/shellquote"
	"github.com/obversa/obversa/store"
)

// RunView is a run as the run page shows it (GET /api/runs/{id}, and the
// "run" server-sent event): the shared read model's summary and nodes,
// the graph as Mermaid with each node coloured by its state, the
// positions waiting for a decision, and the exact command for each
// action.
type RunView struct {
	Run    runview.Summary  `json:"run"`
	Result *runstate.Result `json:"result,omitempty"`
	Nodes  []NodeView       `json:"nodes"`
	// Graph is the Mermaid source of the graph's structure, as host/diagram
	// draws it (`obversa graph RUN`) but with no state: each label's last
	// line is StatusSlot, and no node is coloured. The page draws it once
	// and colours each node, and writes its status in that line, from the
	// node's row (GraphNodes), so that a change of states only recolours
	// the drawing (docs/decisions.md, "The web run browser"). Its node ids
	// are n0, n1… in the order of GraphNodes.
	Graph string `json:"graph"`
	// GraphNodes says which node each of Graph's nodes is: entry i, the
	// id of Mermaid node n<i>'s row in Nodes (a loop member's in the
	// loop's current round), "" when it has none yet (a member of a loop
	// not started). A graph node is a definition's node or loop member,
	// while Nodes also lists for_each instances and every round's members,
	// so the page ties them by id, never by position. It changes only when
	// a loop starts a round, so live changes rarely carry it.
	GraphNodes []string `json:"graph_nodes"`
	// Waiting are the positions paused for an approval not yet decided.
	Waiting []Waiting `json:"waiting"`
	// Live says whether a live watchdog holds the run.
	Live bool `json:"live"`
	// CanResume says whether `obversa resume RUN` may carry the run on:
	// it is paused or interrupted and not live.
	CanResume bool `json:"can_resume"`
	// ReadOnly is the server's --read-only.
	ReadOnly bool `json:"read_only"`
	// Commands are the run's actions as commands.
	Commands []Command `json:"commands"`
}

// StatusSlot is the last line of each node's label in RunView.Graph,
// where the page writes the node's status.
const StatusSlot = "…"

// NodeView is one node: runview.Node and its commands.
type NodeView struct {
	runview.Node
	Commands []Command `json:"commands"`
}

// Waiting is a position paused for approval.
type Waiting struct {
	Node     string    `json:"node"`
	Position string    `json:"position"`
	Commands []Command `json:"commands"`
}

// Command is one action as the `obversa` command line that does it.
type Command struct {
	Action string `json:"action"`
	Line   string `json:"line"`
}

// buildView is the RunView of a fold at time now.
func buildView(st *runstate.State, dir string, now time.Time, live, readOnly bool) RunView {
	v := RunView{Run: runview.Summarize(st, dir, now, live), Result: st.Result(), Live: live, ReadOnly: readOnly}
	q := shellquote.Quote(dir)
	for _, n := range runview.Nodes(st, now, live) {
		nv := NodeView{Node: n, Commands: []Command{
			{"show", "obversa show " + q + " " + shellquote.Quote(n.ID)},
			{"logs", "obversa logs --node " + shellquote.Quote(n.ID) + " " + q},
		}}
		if p := n.Pause; p != nil && p.Kind == graph.PauseApproval && n.Approved == "" && n.Status == runview.StatusPaused {
			w := Waiting{Node: n.ID, Position: p.Position, Commands: []Command{
				{"approve", "obversa approve " + q + " " + shellquote.Quote(p.Position)},
				{"deny", "obversa approve --deny " + q + " " + shellquote.Quote(p.Position)},
			}}
			v.Waiting = append(v.Waiting, w)
			nv.Commands = append(nv.Commands, w.Commands...)
		}
		v.Nodes = append(v.Nodes, nv)
	}
	phase := v.Run.Phase
	// A paused run whose approvals are not all decided waits for them: a
	// bare resume would be refused (RESUME_POSITION).
	v.CanResume = !live && (phase == runview.PhaseInterrupted || phase == string(runstate.PhasePaused) && len(v.Waiting) == 0)
	v.Commands = []Command{
		{"show", "obversa show " + q},
		{"graph", "obversa graph " + q},
		{"events", "obversa events " + q},
		{"logs", "obversa logs --follow " + q},
	}
	if v.CanResume {
		v.Commands = append(v.Commands, Command{"resume", "obversa resume " + q})
	}
	if live {
		v.Commands = append(v.Commands, Command{"pause", "obversa stop --pause " + q}, Command{"stop", "obversa stop " + q})
	}
	d := diagram.New(st.Start().Definition, nil)
	d.StatusSlot = StatusSlot
	rows := graphRows(st)
	v.GraphNodes = make([]string, len(d.Nodes))
	for i := range d.Nodes {
		v.GraphNodes[i] = rows[d.Nodes[i].ID]
	}
	var b bytes.Buffer
	if err := d.Write(&b, diagram.FormatMermaid); err == nil {
		v.Graph = b.String()
	}
	return v
}

// graphRows maps each id host/diagram draws a node of (a definition's
// node, a loop's member) to the id of its row in runview.Nodes: the
// node's own, or the member's in the loop's current round. A member of a
// loop not started has none.
func graphRows(st *runstate.State) map[string]string {
	rows := map[string]string{}
	for _, v := range st.Graph().Vertices() {
		if v.Loop == nil {
			rows[v.Def.ID] = v.Def.ID
			continue
		}
		if r := v.Loop.Current(); r != nil {
			for _, m := range r.Members {
				rows[m.Def.ID] = m.Name()
			}
		}
	}
	return rows
}

// redactorOf redacts the known secrets of a run, as the CLI's writers
// do: the values of the environment variables its storage block names
// (watchdog.Policy).
func redactorOf(st *runstate.State) *store.Redactor {
	return store.NewRedactor(watchdog.Policy(st.Start().Plan).KnownSecrets)
}
