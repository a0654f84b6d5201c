// Package diagram draws a run's graph for people: as a Mermaid flowchart
// (Markdown, GitHub, the Mermaid live editor) or as Graphviz DOT (`dot
// -Tsvg`). It is the renderer behind `obversa graph` (docs/cli.md).
//
// A Diagram is built from a graph definition — compiled from a run file
// or read back from a run's record — and, optionally, each node's status
// in that run's fold (host/graph.State), which colours the node. It holds
// what is drawn independently of the format:
//
//   - one box per node, labelled with its id, its kind and its lane or
//     binding (and "approval" when it waits for `obversa approve`);
//     optional nodes are drawn rounded (Mermaid) or dashed (DOT),
//     finalizers with a double border (Mermaid's subroutine shape) and,
//     in DOT, on the last rank, since they run last and have no edges;
//   - one edge per depends_on entry, from the dependency to the dependent;
//   - groups: a node may belong to a group, and a group to a parent
//     group; each is drawn as a labelled frame (a Mermaid subgraph, a DOT
//     cluster). A loop is drawn as a group holding its members; a for_each
//     node as one box whose detail says how many instances it has (or that
//     they are decided at run time).
//
// Output is deterministic: nodes in declaration order, edges in the order
// of the nodes and their depends_on lists, so a drawing can be kept in
// version control and diffed.
package diagram
