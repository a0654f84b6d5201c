package diagram

import (
	"errors"
	"fmt"
	"io"

	"github.com/obversa/obversa/host/graph"
)

// ErrFormat is returned by ParseFormat and Write for a format other than
// FormatMermaid and FormatDOT.
var ErrFormat = errors.New("unknown diagram format")

// Format is an output format.
type Format string

// Output formats.
const (
	FormatMermaid Format = "mermaid"
	FormatDOT     Format = "dot"
)

// ParseFormat returns the format named s ("mermaid" or "dot"), or an
// error wrapping ErrFormat that lists both.
func ParseFormat(s string) (Format, error) {
	switch f := Format(s); f {
	case FormatMermaid, FormatDOT:
		return f, nil
	}
	return "", fmt.Errorf("%w %q: use mermaid or dot", ErrFormat, s)
}

// Diagram is a graph as drawn, independent of the format.
type Diagram struct {
	// Name is the graph's name ("dag"), the DOT graph's id.
	Name string
	// Nodes are drawn in this order.
	Nodes []Node
	// Edges run from a dependency to its dependent, by node id.
	Edges []Edge
	// Groups frame nodes that belong together (a loop's members, a
	// for_each node's instances); parents come before their children.
	Groups []Group
	// StatusSlot, when not "", makes the Mermaid source the graph's
	// structure alone, the same whatever state its nodes are in: no node
	// is coloured, and each label ends with a line of its own holding
	// StatusSlot in place of the node's status, which the run page fills
	// in (with each node's colour) on a drawing it keeps across updates
	// (docs/ui.md). The nodes' Status is then not drawn.
	StatusSlot string
}

// Node is one box.
type Node struct {
	// ID is the node id, unique in the diagram.
	ID string
	// Kind is graph.KindRequired, KindOptional or KindFinalizer.
	Kind string
	// Lane or Binding is set (the other is "").
	Lane, Binding string
	// Approval marks a node that waits for `obversa approve`.
	Approval bool
	// ForEach describes a for_each node's instances ("for_each 3 items",
	// "for_each dynamic, max 1000"); "" for other nodes.
	ForEach string
	// Status, when not "", colours the node: a graph.Status name ("idle",
	// "dispatched", "started", "interrupted", "paused", "passed",
	// "failed"),
	// StatusBlocked, StatusSkipped or StatusStopped. Other values are shown in the label,
	// uncoloured.
	Status string
	// Group is the ID of the group the node is drawn in, "" for none.
	Group string
}

// StatusBlocked is the status of a node that can no longer run because a
// dependency failed: derived by a reader of the fold, never recorded.
const StatusBlocked = "blocked"

// StatusSkipped is the status of a node never dispatched in a run that has
// ended: derived by a reader of the fold, never recorded.
const StatusSkipped = "skipped"

// StatusStopped is the status of a node the run's end left waiting for
// reconciliation: derived by a reader of the fold, never recorded.
const StatusStopped = "stopped"

// Edge is one depends_on entry.
type Edge struct {
	From, To string
}

// Group is a labelled frame around nodes and other groups.
type Group struct {
	// ID is unique among groups; Label is shown on the frame.
	ID, Label string
	// Parent is the ID of the enclosing group, "" for the top level.
	Parent string
}

// New builds the diagram of a definition. statuses, when not nil, gives
// the fold's status of nodes by id (a loop member's in its current round);
// a node without an entry is drawn uncoloured.
//
// A loop is a group labelled with its id, max_rounds and review member,
// holding its members and their edges; an edge into the loop goes to each
// member that depends on no other, an edge out of it leaves from its
// review member (which runs last in every round). A for_each node is one
// box whose detail says how its instances are decided.
func New(def *graph.Definition, statuses map[string]graph.Status) *Diagram {
	d := &Diagram{Name: def.Name}
	exit := map[string][]string{} // a vertex's boxes that its dependents follow
	for _, n := range def.Nodes {
		if n.Loop != nil {
			exit[n.ID] = []string{n.Loop.Review}
		} else {
			exit[n.ID] = []string{n.ID}
		}
	}
	for _, n := range def.Nodes {
		if n.Loop == nil {
			d.Nodes = append(d.Nodes, newNode(n, "", statuses))
			for _, dep := range n.DependsOn {
				for _, from := range exit[dep] {
					d.Edges = append(d.Edges, Edge{From: from, To: n.ID})
				}
			}
			continue
		}
		label := fmt.Sprintf("loop %s · max %d rounds · review %s", n.ID, n.Loop.MaxRounds, n.Loop.Review)
		if n.Kind != graph.KindRequired {
			label += " · " + n.Kind
		}
		d.Groups = append(d.Groups, Group{ID: n.ID, Label: label})
		for _, m := range n.Loop.Members {
			d.Nodes = append(d.Nodes, newNode(m, n.ID, statuses))
			deps := m.DependsOn
			if len(deps) == 0 {
				// An entry member follows what the loop depends on.
				for _, dep := range n.DependsOn {
					for _, from := range exit[dep] {
						d.Edges = append(d.Edges, Edge{From: from, To: m.ID})
					}
				}
			}
			for _, dep := range deps {
				d.Edges = append(d.Edges, Edge{From: dep, To: m.ID})
			}
		}
	}
	return d
}

// newNode is the box of a node or loop member.
func newNode(n graph.NodeDef, group string, statuses map[string]graph.Status) Node {
	node := Node{ID: n.ID, Kind: n.Kind, Lane: n.Lane, Binding: n.Binding, Approval: n.Approval, Group: group}
	if fe := n.ForEach; fe != nil {
		node.ForEach = fmt.Sprintf("for_each %d items", len(fe.Items))
		if fe.Source != "" {
			node.ForEach = fmt.Sprintf("for_each dynamic, max %d", fe.MaxItems)
		}
	}
	if s, ok := statuses[n.ID]; ok {
		node.Status = s.String()
	}
	return node
}

// Write draws the diagram in format f. Errors: ErrFormat, or the
// writer's.
func (d *Diagram) Write(w io.Writer, f Format) error {
	switch f {
	case FormatMermaid:
		return d.mermaid(w)
	case FormatDOT:
		return d.dot(w)
	}
	return fmt.Errorf("%w %q: use mermaid or dot", ErrFormat, f)
}

// detail is the second line of a node's label: kind, lane or binding,
// approval and status.
func (n Node) detail() string {
	s := n.Kind
	switch {
	case n.Lane != "":
		s += " · lane " + n.Lane
	case n.Binding != "":
		s += " · binding " + n.Binding
	}
	if n.ForEach != "" {
		s += " · " + n.ForEach
	}
	if n.Approval {
		s += " · approval"
	}
	if n.Status != "" {
		s += " · " + n.Status
	}
	return s
}

// style is how a status is coloured: fill and stroke, as #rrggbb.
type style struct{ fill, stroke string }

// styles colour the statuses a fold knows; the palette stays readable
// with black text on light and dark backgrounds.
var styles = map[string]style{
	"idle":        {"#f1f3f5", "#868e96"},
	"dispatched":  {"#d0ebff", "#1c7ed6"},
	"started":     {"#d0ebff", "#1c7ed6"},
	"paused":      {"#fff3bf", "#f08c00"},
	"interrupted": {"#fff3bf", "#e8590c"},
	"passed":      {"#d3f9d8", "#2b8a3e"},
	"failed":      {"#ffe3e3", "#c92a2a"},
	StatusBlocked: {"#e9ecef", "#495057"},
	StatusSkipped: {"#f8f9fa", "#adb5bd"},
	StatusStopped: {"#f8f9fa", "#e8590c"},
}

// statusOrder is the order class definitions are written in.
var statusOrder = []string{"idle", "dispatched", "started", "interrupted", "paused", "passed", "failed", StatusBlocked, StatusSkipped, StatusStopped}

// walk visits the nodes and groups inside group parent ("" for the top
// level) in diagram order, depth first: node for each node, open and shut
// around each group's contents. depth is 1 at the top level.
func (d *Diagram) walk(parent string, depth int, node func(n Node, depth int), open, shut func(g Group, depth int)) {
	for _, n := range d.Nodes {
		if n.Group == parent {
			node(n, depth)
		}
	}
	for _, g := range d.Groups {
		if g.Parent == parent {
			open(g, depth)
			d.walk(g.ID, depth+1, node, open, shut)
			shut(g, depth)
		}
	}
}
