package hcl

import (
	"fmt"
)

// checkRefs diagnoses template references to results a node cannot see
// (docs/run-file.md, "Templates"): a node sees its transitive
// dependencies; a finalizer every vertex that is not a finalizer; a loop
// member the members it depends on (this round's results) and what its
// loop sees; a loop's until the members other than the review and what
// the loop sees. A loop is read from outside as input.results.<loop>.<member>.
// Dependency checks need valid acyclic edges (acyclic); the other checks
// run regardless.
func (d *decoder) checkRefs(infos []*nodeInfo, byID map[string]*nodeInfo, acyclic bool) {
	var ids []string
	for _, info := range infos {
		ids = append(ids, info.n.ID)
	}
	reach := newReachOf(byID)
	for _, info := range infos {
		if info.n.Loop == nil {
			d.checkNodeRefs(info, info.refs, byID, reach, ids, acyclic)
			continue
		}
		for _, m := range info.members {
			d.checkNodeRefs(m, m.refs, byID, reach, ids, acyclic)
		}
		d.checkNodeRefs(info, info.untilRefs, byID, reach, ids, acyclic)
	}
}

// checkNodeRefs checks the references of one node, member, or loop's
// until (from a loop).
func (d *decoder) checkNodeRefs(from *nodeInfo, refs []resultRef, byID map[string]*nodeInfo, reach *reachOf, ids []string, acyclic bool) {
	// vertex is the graph vertex whose dependencies from may read.
	vertex := from
	if from.loop != nil {
		vertex = from.loop
	}
	for _, ref := range refs {
		target, exists := byID[ref.Node]
		switch {
		case !exists:
			d.errorAt(ref.Range, fmt.Sprintf("Unknown node %q in reference %s", ref.Node, ref.Text),
				fmt.Sprintf("The graph has no node %q. Fix the id.%s", ref.Node, didYouMean(ref.Node, candidates(from, ids))))
			continue
		case target == from:
			d.errorAt(ref.Range, fmt.Sprintf("Node %q refers to its own result", from.n.ID),
				fmt.Sprintf("%s is the result of this node, which does not exist yet when it runs. Refer to the result of a node it depends on.", ref.Text))
			continue
		case target.loop != nil:
			if !d.memberRefOK(from, target, ref, reach, acyclic) {
				continue
			}
		case vertex.n.Kind == KindFinalizer:
			if target.n.Kind == KindFinalizer {
				d.errorAt(ref.Range, fmt.Sprintf("Finalizer %q refers to finalizer %q", vertex.n.ID, ref.Node),
					"A finalizer receives the results of the nodes that are not finalizers; finalizers are not ordered among themselves, so one cannot use another's result. Remove this reference.")
				continue
			}
		case acyclic:
			if !reach.dependsOn(vertex.n.DependsOn, ref.Node) {
				if vertex != from {
					d.errorAt(ref.Range, fmt.Sprintf("Loop %q does not depend on %q", vertex.n.ID, ref.Node),
						fmt.Sprintf("%s is only available inside a loop that depends on %q, directly or through other nodes. Add %q to the depends_on of loop %q.", ref.Text, ref.Node, ref.Node, vertex.n.ID))
				} else {
					d.errorAt(ref.Range, fmt.Sprintf("Node %q does not depend on %q", from.n.ID, ref.Node),
						fmt.Sprintf("%s is only available to nodes that depend on %q, directly or through other nodes. Add %q to the depends_on of %q.", ref.Text, ref.Node, ref.Node, from.n.ID))
				}
				continue
			}
		}
		d.checkRefShape(target, ref)
	}
}

// memberRefOK checks a reference to a loop member: from another member of
// its loop it must be a dependency (this round's result); from the loop's
// until, any member but the review; from anywhere else it is refused.
func (d *decoder) memberRefOK(from, target *nodeInfo, ref resultRef, reach *reachOf, acyclic bool) bool {
	loop := target.loop
	switch {
	case from == loop:
		if ref.Node == loop.n.Loop.Review {
			d.errorAt(ref.Range, fmt.Sprintf("until of loop %q refers to the review member %q", loop.n.ID, ref.Node),
				"until is checked before the review runs, once every other member of the round has passed; it can read those members' results, not the review's.")
			return false
		}
		return true
	case from.loop == loop:
		if !acyclic {
			return true
		}
		if !reach.dependsOn(from.n.DependsOn, ref.Node) {
			d.errorAt(ref.Range, fmt.Sprintf("Member %q does not depend on %q", from.n.ID, ref.Node),
				fmt.Sprintf("%s is this round's result of member %q, only available to members that depend on it. Add %q to the depends_on of %q, or use ${loop.previous.%s} for its previous round's result.", ref.Text, ref.Node, ref.Node, from.n.ID, ref.Node))
			return false
		}
		return true
	}
	d.errorAt(ref.Range, fmt.Sprintf("%q is a member of loop %q", ref.Node, loop.n.ID),
		fmt.Sprintf("A loop's members are read from outside it through the loop: depend on %q and refer to ${input.results.%s.%s}, the result of its last round.", loop.n.ID, loop.n.ID, ref.Node))
	return false
}

// checkRefShape checks how a reference goes into a result: a loop's
// result is an object of its members (input.results.<loop>.<member>); an
// engine node's result is text, with nothing inside to refer to.
func (d *decoder) checkRefShape(target *nodeInfo, ref resultRef) {
	n := target.n
	switch {
	case n.Loop != nil && ref.Deeper:
		var members []string
		var member *Node
		for i := range n.Loop.Members {
			members = append(members, n.Loop.Members[i].ID)
			if n.Loop.Members[i].ID == ref.Attr {
				member = &n.Loop.Members[i]
			}
		}
		if member == nil {
			d.errorAt(ref.Range, fmt.Sprintf("Loop %q has no member %q", n.ID, ref.Attr),
				fmt.Sprintf("The result of loop %q is an object of its members' results in its last round, read as input.results.%s.<member>.%s", n.ID, n.ID, didYouMean(ref.Attr, members)))
			return
		}
		if member.Lane != "" && ref.Deepest {
			d.errorAt(ref.Range, fmt.Sprintf("The result of engine node %q is text", member.ID),
				fmt.Sprintf("%s goes into the result of %q, but an engine node's result is its final answer as a string. Refer to it whole, as ${input.results.%s.%s}.", ref.Text, member.ID, n.ID, member.ID))
		}
	case n.Lane != "" && n.ForEach == nil && ref.Deeper:
		// An engine node's result is its final text: there is nothing
		// inside it to refer to.
		d.errorAt(ref.Range, fmt.Sprintf("The result of engine node %q is text", ref.Node),
			fmt.Sprintf("%s goes into the result of %q, but an engine node's result is its final answer as a string. Refer to it whole, as ${input.results.%s}.", ref.Text, ref.Node, ref.Node))
	}
}

// candidates are the names a reference from could mean: the graph's
// vertices, and a member's fellow members.
func candidates(from *nodeInfo, ids []string) []string {
	loop := from.loop
	if from.n.Loop != nil {
		loop = from
	}
	if loop == nil {
		return ids
	}
	out := append([]string{}, ids...)
	for _, m := range loop.members {
		out = append(out, m.n.ID)
	}
	return out
}
