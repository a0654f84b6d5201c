package diagram

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/obversa/obversa/host/graph"
	"github.com/obversa/obversa/internal/bidi"
)

// dot writes a Graphviz digraph, top to bottom, finalizers on the last
// rank. Groups are clusters.
func (d *Diagram) dot(out io.Writer) error {
	w := bufio.NewWriter(out)
	fmt.Fprintf(w, "digraph %s {\n", dotID(d.Name))
	fmt.Fprintln(w, `  rankdir=TB;`)
	fmt.Fprintln(w, `  node [shape=box, fontname="Helvetica"];`)
	groupIDs := map[string]string{}
	for i, g := range d.Groups {
		groupIDs[g.ID] = fmt.Sprintf("cluster_%d", i)
	}
	indent := func(depth int) string { return strings.Repeat("  ", depth) }
	d.walk("", 1, func(n Node, depth int) {
		fmt.Fprintf(w, "%s%s [%s];\n", indent(depth), dotID(n.ID), dotAttrs(n))
	}, func(g Group, depth int) {
		fmt.Fprintf(w, "%ssubgraph %s {\n%slabel=%s;\n", indent(depth), groupIDs[g.ID], indent(depth+1), dotID(bidi.Escape(g.Label)))
	}, func(_ Group, depth int) {
		fmt.Fprintf(w, "%s}\n", indent(depth))
	})
	for _, e := range d.Edges {
		fmt.Fprintf(w, "  %s -> %s;\n", dotID(e.From), dotID(e.To))
	}
	var last []string
	for _, n := range d.Nodes {
		if n.Kind == graph.KindFinalizer {
			last = append(last, dotID(n.ID))
		}
	}
	if len(last) > 0 {
		fmt.Fprintf(w, "  { rank=sink; %s; }\n", strings.Join(last, "; "))
	}
	fmt.Fprintln(w, "}")
	return w.Flush()
}

// dotAttrs are a node's attributes: its two-line label, a dashed border
// for optional nodes, a double border for finalizers, a fill for a status.
func dotAttrs(n Node) string {
	// A label shows each bidirectional control as an escape, as
	// mermaidText does.
	attrs := []string{"label=" + dotID(bidi.Escape(n.ID+"\n"+n.detail()))}
	var styleWords []string
	switch n.Kind {
	case graph.KindOptional:
		styleWords = append(styleWords, "dashed")
	case graph.KindFinalizer:
		attrs = append(attrs, "peripheries=2")
	}
	if st, ok := styles[n.Status]; ok {
		styleWords = append(styleWords, "filled")
		attrs = append(attrs, "fillcolor="+dotID(st.fill), "color="+dotID(st.stroke))
	}
	if len(styleWords) > 0 {
		attrs = append(attrs, "style="+dotID(strings.Join(styleWords, ",")))
	}
	return strings.Join(attrs, ", ")
}

// dotID quotes s as a DOT string id; a newline becomes the \n escape.
func dotID(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s) + `"`
}
