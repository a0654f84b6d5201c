package hcl

import (
	"fmt"

	hclv2 "github.com/hashicorp/hcl/v2"
)

// graphSchema is the body of the graph block.
var graphSchema = &hclv2.BodySchema{
	Attributes: []hclv2.AttributeSchema{
		{Name: "global_concurrency"},
		{Name: "keyed_concurrency"},
		{Name: "stop_on_error"},
		{Name: "retry_cap_per_node"},
		{Name: "approval"},
		{Name: "policy"},
		{Name: "policy_timeout"},
	},
	Blocks: []hclv2.BlockHeaderSchema{{Type: "node", LabelNames: []string{"id"}}, {Type: "loop", LabelNames: []string{"id"}}},
}

// nodeInfo is a decoded vertex (node or loop) or loop member with the
// source ranges validation needs.
type nodeInfo struct {
	idx int // index in Graph.Nodes, or in its loop's Members
	// n is the decoded node, set once every block is decoded (the slices
	// no longer move).
	n         *Node
	blk       *hclv2.Block
	attrs     hclv2.Attributes
	depRanges []hclv2.Range
	refs      []resultRef
	// loop is the loop a member belongs to; members are a loop's.
	loop    *nodeInfo
	members []*nodeInfo
	// untilRefs are a loop's until condition's references to results.
	untilRefs []resultRef
}

// graph decodes the graph block and validates the graph as a whole.
func (d *decoder) graph(blk *hclv2.Block, rf *RunFile) Graph {
	g := Graph{
		Name:              blk.Labels[0],
		GlobalConcurrency: DefaultGlobalConcurrency,
		RetryCapPerNode:   DefaultRetryCapPerNode,
		PolicyTimeout:     DefaultPolicyTimeout,
		Nodes:             []Node{},
	}
	if g.Name != GraphForm {
		d.errorAt(blk.LabelRanges[0], fmt.Sprintf("Unsupported graph form %q", g.Name),
			fmt.Sprintf("The only graph form is %q: write graph %q { … }.", GraphForm, GraphForm))
	}
	content, diags := blk.Body.Content(graphSchema)
	d.diags = append(d.diags, diags...)
	attrs := content.Attributes
	keyRanges := d.graphLimits(attrs, &g)

	var infos []*nodeInfo
	for _, nb := range content.Blocks {
		if nb.Type == "loop" {
			infos = append(infos, d.loop(nb, &g.Nodes))
		} else {
			infos = append(infos, d.node(nb, &g.Nodes))
		}
	}
	if len(content.Blocks) == 0 {
		d.errorAt(blk.DefRange, "Empty graph",
			"The graph has no nodes. Add at least one node block, for example node \"draft\" { lane = \"writer\" prompt = \"…\" }.")
		return g
	}
	var all []*nodeInfo // vertices and members
	for _, info := range infos {
		info.n = &g.Nodes[info.idx]
		all = append(all, info)
		for _, m := range info.members {
			m.n = &info.n.Loop.Members[m.idx]
			all = append(all, m)
		}
	}
	d.checkGraph(&g, attrs, infos, all, keyRanges, rf)
	return g
}

// graphLimits decodes the graph's global_concurrency, keyed_concurrency,
// stop_on_error and retry_cap_per_node into g and returns the source
// ranges of keyed_concurrency's keys.
func (d *decoder) graphLimits(attrs hclv2.Attributes, g *Graph) map[string]hclv2.Range {
	if a := attrs["global_concurrency"]; a != nil {
		if v, ok := d.intAttr(a, 1, "4"); ok {
			g.GlobalConcurrency = v
		}
	}
	keyRanges := map[string]hclv2.Range{}
	if a := attrs["keyed_concurrency"]; a != nil {
		g.KeyedConcurrency = d.keyedConcurrency(a, keyRanges)
	}
	if a := attrs["stop_on_error"]; a != nil {
		if v, ok := d.boolean(a); ok {
			g.StopOnError = v
		}
	}
	if a := attrs["retry_cap_per_node"]; a != nil {
		// 0 is valid: no retries.
		if v, ok := d.intAttr(a, 0, "1"); ok {
			g.RetryCapPerNode = v
		}
	}
	return keyRanges
}

// checkGraph validates the decoded graph as a whole: ids, bindings, edges
// and cycles (between vertices and within each loop), keys, approval,
// policy and template references. infos are the vertices; all are the
// vertices and their members.
func (d *decoder) checkGraph(g *Graph, attrs hclv2.Attributes, infos, all []*nodeInfo, keyRanges map[string]hclv2.Range, rf *RunFile) {
	byID := d.uniqueIDs(all)

	d.checkBindings(all, rf)
	edgesOK := d.checkEdges(infos, byID)
	for _, info := range infos {
		if info.n.Loop != nil {
			edgesOK = d.checkMemberEdges(info, byID) && edgesOK
		}
	}
	if edgesOK {
		edgesOK = d.checkCycles(infos, byID)
		for _, info := range infos {
			if info.n.Loop != nil {
				edgesOK = d.checkCycles(info.members, byID) && edgesOK
			}
		}
	}
	d.checkKeys(all, keyRanges, g.KeyedConcurrency)
	if a := attrs["approval"]; a != nil {
		d.approval(a, g, all, byID)
	}
	d.policy(attrs, g, rf)
	d.checkRefs(infos, byID, edgesOK)
}

// keyedConcurrency decodes `keyed_concurrency = { key = limit, … }` in
// declaration order.
func (d *decoder) keyedConcurrency(a *hclv2.Attribute, keyRanges map[string]hclv2.Range) []KeyLimit {
	if len(a.Expr.Variables()) > 0 {
		d.static(a) // diagnoses the reference
		return nil
	}
	items, ok := d.objectItems(a.Expr, "keyed_concurrency")
	if !ok {
		d.errorAt(a.Expr.Range(), "Invalid keyed_concurrency",
			"keyed_concurrency must be an object of key names to limits, written as { repo = 1, api = 2 }; the order written is the order limits apply.")
		return nil
	}
	var out []KeyLimit
	for _, it := range items {
		if !d.checkName("concurrency key", it.Key, it.KeyRange) {
			continue
		}
		ka := &hclv2.Attribute{Name: fmt.Sprintf("keyed_concurrency.%s", it.Key), Expr: it.Value, Range: hclv2.RangeBetween(it.KeyRange, it.Value.Range())}
		limit, ok := d.intAttr(ka, 1, "1")
		if !ok {
			continue
		}
		keyRanges[it.Key] = it.KeyRange
		out = append(out, KeyLimit{Key: it.Key, Limit: limit})
	}
	return out
}
