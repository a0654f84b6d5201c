package diagram

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/obversa/obversa/host/graph"
	"github.com/obversa/obversa/internal/bidi"
)

// mermaid writes a Mermaid flowchart, top to bottom. Node and group ids
// are generated (n0, n1…, g0, g1…): ids from the run file may contain
// '.' or be words Mermaid reserves ("end"), so they only appear in labels.
func (d *Diagram) mermaid(out io.Writer) error {
	w := bufio.NewWriter(out)
	ids := map[string]string{}
	for i, n := range d.Nodes {
		ids[n.ID] = fmt.Sprintf("n%d", i)
	}
	groupIDs := map[string]string{}
	for i, g := range d.Groups {
		groupIDs[g.ID] = fmt.Sprintf("g%d", i)
	}
	fmt.Fprintln(w, "flowchart TD")
	indent := func(depth int) string { return strings.Repeat("  ", depth) }
	d.walk("", 1, func(n Node, depth int) {
		fmt.Fprintf(w, "%s%s%s\n", indent(depth), ids[n.ID], mermaidShape(n, d.StatusSlot))
	}, func(g Group, depth int) {
		fmt.Fprintf(w, "%ssubgraph %s [\"%s\"]\n", indent(depth), groupIDs[g.ID], mermaidText(g.Label))
	}, func(_ Group, depth int) {
		fmt.Fprintf(w, "%send\n", indent(depth))
	})
	for _, e := range d.Edges {
		fmt.Fprintf(w, "  %s --> %s\n", ids[e.From], ids[e.To])
	}
	byStatus := map[string][]string{}
	for _, n := range d.Nodes {
		if _, ok := styles[n.Status]; ok && d.StatusSlot == "" {
			byStatus[n.Status] = append(byStatus[n.Status], ids[n.ID])
		}
	}
	for _, s := range statusOrder {
		if len(byStatus[s]) == 0 {
			continue
		}
		st := styles[s]
		fmt.Fprintf(w, "  classDef %s fill:%s,stroke:%s,color:#000\n", s, st.fill, st.stroke)
		fmt.Fprintf(w, "  class %s %s\n", strings.Join(byStatus[s], ","), s)
	}
	return w.Flush()
}

// mermaidShape is a node's shape and label: a box for required nodes, a
// rounded box for optional ones, a subroutine (double-bordered) box for
// finalizers. A slot, when not "", is the label's last line.
func mermaidShape(n Node, slot string) string {
	if slot != "" {
		n.Status = ""
	}
	label := mermaidText(n.ID) + "<br/>" + mermaidText(n.detail())
	if slot != "" {
		label += "<br/>" + mermaidText(slot)
	}
	label = "\"" + label + "\""
	switch n.Kind {
	case graph.KindOptional:
		return "(" + label + ")"
	case graph.KindFinalizer:
		return "[[" + label + "]]"
	}
	return "[" + label + "]"
}

// mermaidText escapes text for a quoted Mermaid label with entity codes,
// and shows each bidirectional control as an escape (bidi.Escape, as the
// command line does), so a label holding U+202E is not shown reordered.
func mermaidText(s string) string { return bidi.Escape(mermaidEscaper.Replace(s)) }

// mermaidEscaper is built once: a Replacer builds its tables on first use.
var mermaidEscaper = strings.NewReplacer(`"`, "#quot;", "<", "#lt;", ">", "#gt;", "\n", " ")
