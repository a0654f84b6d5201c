package hcl

import (
	"fmt"
	"strings"

	hclv2 "github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// uniqueIDs diagnoses two vertices or members with one id — node, loop
// and member ids share one namespace, since depends_on and input.results
// name them — and returns the first declaration of each id.
func (d *decoder) uniqueIDs(all []*nodeInfo) map[string]*nodeInfo {
	byID := map[string]*nodeInfo{}
	for _, info := range all {
		id := info.n.ID
		prev, dup := byID[id]
		if !dup {
			byID[id] = info
			continue
		}
		what := info.blk.Type
		if prev.blk.Type == what && (prev.loop == nil) == (info.loop == nil) {
			d.errorAt(info.blk.LabelRanges[0], fmt.Sprintf("Duplicate %s %q", what, id),
				fmt.Sprintf("A %s named %q is already declared at %s. Names of %ss must be unique; rename or remove one of them.", what, id, prev.blk.DefRange.String(), what))
			continue
		}
		d.errorAt(info.blk.LabelRanges[0], fmt.Sprintf("Duplicate name %q", id),
			fmt.Sprintf("%s is already declared at %s. Nodes, loops and loop members share one set of names, since depends_on and input.results refer to them by name; rename one of them.", describe(prev), prev.blk.DefRange.String()))
	}
	return byID
}

// describe names what an info declares, for messages.
func describe(info *nodeInfo) string {
	switch {
	case info.loop != nil:
		return fmt.Sprintf("Member %q of loop %q", info.n.ID, info.loop.n.ID)
	case info.n.Loop != nil:
		return fmt.Sprintf("Loop %q", info.n.ID)
	}
	return fmt.Sprintf("Node %q", info.n.ID)
}

// checkEdges diagnoses depends_on entries of the graph's vertices that
// are unknown, the vertex itself, repeated, a loop's member, or that touch
// a finalizer. It reports whether every edge is valid.
func (d *decoder) checkEdges(infos []*nodeInfo, byID map[string]*nodeInfo) bool {
	ok := true
	ids := make([]string, 0, len(infos))
	for _, info := range infos {
		ids = append(ids, info.n.ID)
	}
	for _, info := range infos {
		n := info.n
		if len(n.DependsOn) == 0 {
			continue
		}
		if n.Kind == KindFinalizer {
			a := info.attrs["depends_on"]
			d.errorAt(a.NameRange, fmt.Sprintf("Finalizer %q has depends_on", n.ID),
				"Finalizers have no edges: they run after every other node has settled, on success and on failure, and receive the results of every node that passed. Remove depends_on (the prompt can still use ${input.results.<node>}), or change kind to \"required\" to order this node.")
			ok = false
			continue
		}
		seen := map[string]bool{}
		for i, dep := range n.DependsOn {
			rng := info.depRanges[i]
			target, exists := byID[dep]
			switch {
			case dep == n.ID:
				d.errorAt(rng, fmt.Sprintf("Node %q depends on itself", n.ID),
					fmt.Sprintf("Remove %q from its own depends_on.", n.ID))
				ok = false
			case !exists:
				d.errorAt(rng, fmt.Sprintf("Unknown node %q in depends_on", dep),
					fmt.Sprintf("Node %q depends on %q, but the graph has no node with that id. Fix the id or add the node.%s", n.ID, dep, didYouMean(dep, ids)))
				ok = false
			case seen[dep]:
				d.errorAt(rng, fmt.Sprintf("Duplicate dependency %q", dep),
					fmt.Sprintf("Node %q lists %q more than once in depends_on; remove the repeat.", n.ID, dep))
				ok = false
			case target.loop != nil:
				d.errorAt(rng, fmt.Sprintf("%q is a member of loop %q", dep, target.loop.n.ID),
					fmt.Sprintf("A loop is one vertex of the graph: depend on the loop, depends_on = [%q], and read the member's last-round result as ${input.results.%s.%s}.", target.loop.n.ID, target.loop.n.ID, dep))
				ok = false
			case target.n.Kind == KindFinalizer:
				d.errorAt(rng, fmt.Sprintf("Node %q depends on finalizer %q", n.ID, dep),
					fmt.Sprintf("Finalizers have no edges: they run last, after every other node has settled, so nothing can depend on %q. Remove it from depends_on, or change %q's kind to \"required\".", dep, dep))
				ok = false
			}
			seen[dep] = true
		}
	}
	return ok
}

// checkMemberEdges diagnoses a loop's members' depends_on: each must name
// another member of the same loop, and none the review member (it runs
// after every other member of its round). It reports whether every edge
// is valid.
func (d *decoder) checkMemberEdges(loop *nodeInfo, byID map[string]*nodeInfo) bool {
	ok := true
	var names []string
	for _, m := range loop.members {
		names = append(names, m.n.ID)
	}
	lid, review := loop.n.ID, loop.n.Loop.Review
	for _, m := range loop.members {
		seen := map[string]bool{}
		for i, dep := range m.n.DependsOn {
			rng := m.depRanges[i]
			target, exists := byID[dep]
			switch {
			case dep == m.n.ID:
				d.errorAt(rng, fmt.Sprintf("Node %q depends on itself", dep), fmt.Sprintf("Remove %q from its own depends_on.", dep))
			case exists && target.loop != loop:
				d.errorAt(rng, fmt.Sprintf("Member %q of loop %q depends on %q, outside the loop", m.n.ID, lid, dep),
					fmt.Sprintf("A member's depends_on names other members of its loop; the loop as a whole waits for what it depends on. Add %q to the depends_on of loop %q instead; its result stays available as ${input.results.%s}.", dep, lid, dep))
			case !exists:
				d.errorAt(rng, fmt.Sprintf("Unknown member %q in depends_on", dep),
					fmt.Sprintf("Member %q of loop %q depends on %q, but the loop has no member with that id.%s", m.n.ID, lid, dep, didYouMean(dep, names)))
			case seen[dep]:
				d.errorAt(rng, fmt.Sprintf("Duplicate dependency %q", dep),
					fmt.Sprintf("Node %q lists %q more than once in depends_on; remove the repeat.", m.n.ID, dep))
			case dep == review:
				d.errorAt(rng, fmt.Sprintf("Member %q depends on the review member %q", m.n.ID, dep),
					fmt.Sprintf("The review member of loop %q runs after every other member of its round, so no member can wait for it. Remove %q from depends_on; the next round reads its findings as ${loop.findings}.", lid, dep))
			default:
				seen[dep] = true
				continue
			}
			seen[dep] = true
			ok = false
		}
	}
	return ok
}

// checkCycles diagnoses dependency cycles among infos (the graph's
// vertices, or one loop's members), naming each one found. It is called
// only when every edge is valid. It reports whether they are acyclic.
func (d *decoder) checkCycles(infos []*nodeInfo, byID map[string]*nodeInfo) bool {
	const (
		unvisited = iota
		onStack
		done
	)
	state := make(map[string]int, len(infos))
	var stack []string
	acyclic := true
	var visit func(info *nodeInfo)
	visit = func(info *nodeInfo) {
		n := info.n
		state[n.ID] = onStack
		stack = append(stack, n.ID)
		for i, dep := range n.DependsOn {
			switch state[dep] {
			case unvisited:
				visit(byID[dep])
			case onStack:
				start := len(stack) - 1
				for stack[start] != dep {
					start--
				}
				cycle := append(append([]string{}, stack[start:]...), dep)
				d.errorAt(info.depRanges[i], "Dependency cycle: "+strings.Join(cycle, " → "),
					fmt.Sprintf("The nodes %s depend on each other in a cycle (each arrow points from a node to one it depends on), so none of them could ever start. Remove one of these depends_on entries; this one, from %q to %q, closes the cycle.", quoteList(cycle[:len(cycle)-1]), n.ID, dep))
				acyclic = false
			}
		}
		stack = stack[:len(stack)-1]
		state[n.ID] = done
	}
	for _, info := range infos {
		if byID[info.n.ID] != info {
			continue // a duplicate id, already diagnosed
		}
		if state[info.n.ID] == unvisited {
			visit(info)
		}
	}
	return acyclic
}

// checkKeys diagnoses node keys missing from keyed_concurrency.
func (d *decoder) checkKeys(infos []*nodeInfo, keyRanges map[string]hclv2.Range, limits []KeyLimit) {
	var keys []string
	for _, kl := range limits {
		keys = append(keys, kl.Key)
	}
	for _, info := range infos {
		n := info.n
		if n.Key == "" {
			continue
		}
		if _, ok := keyRanges[n.Key]; !ok {
			d.errorAt(info.attrs["key"].Expr.Range(), fmt.Sprintf("Unknown concurrency key %q", n.Key),
				fmt.Sprintf("Node %q uses key %q, but the graph's keyed_concurrency has no entry for it. Add one, for example keyed_concurrency = { %s = 1 }, or use a declared key.%s", n.ID, n.Key, keyLiteral(n.Key), didYouMean(n.Key, keys)))
		}
	}
}

// keyLiteral renders an object key as it must be written in HCL.
func keyLiteral(k string) string {
	if hclsyntax.ValidIdentifier(k) {
		return k
	}
	return fmt.Sprintf("%q", k)
}

// approval decodes the graph's approval list and marks the nodes (loop
// members included; a loop itself takes no position to wait at).
func (d *decoder) approval(a *hclv2.Attribute, g *Graph, all []*nodeInfo, byID map[string]*nodeInfo) {
	names, ranges, ok := d.strList(a, `a list of node ids, for example approval = ["draft"]`)
	if !ok {
		return
	}
	var ids []string
	for _, info := range all {
		if info.n.Loop == nil {
			ids = append(ids, info.n.ID)
		}
	}
	seen := map[string]bool{}
	for i, name := range names {
		info, exists := byID[name]
		switch {
		case !exists:
			d.errorAt(ranges[i], fmt.Sprintf("Unknown node %q in approval", name),
				fmt.Sprintf("approval lists nodes that wait for `obversa approve` before they run, but the graph has no node %q. Fix the id or remove it.%s", name, didYouMean(name, ids)))
		case info.n.Loop != nil:
			d.errorAt(ranges[i], fmt.Sprintf("Loop %q in approval", name),
				fmt.Sprintf("A loop runs no code of its own to wait for; its members do. Name the members that wait for `obversa approve` in each round instead, for example %q.", info.n.Loop.Review))
		case seen[name]:
			d.errorAt(ranges[i], fmt.Sprintf("Duplicate node %q in approval", name), "Remove the repeated entry.")
		default:
			info.n.Approval = true
		}
		seen[name] = true
	}
	g.Approval = nil
	for _, info := range all {
		if info.n.Approval {
			g.Approval = append(g.Approval, info.n.ID)
		}
	}
}
