package hcl

import "slices"

// nearLimit is how many nodes reachOf visits from a node's dependencies
// before it answers from the target's dependents instead.
const nearLimit = 64

// reachOf answers whether a node depends on another, directly or through
// other nodes, over the depends_on edges of byID's nodes (loop members
// included). A reference usually names a dependency or one a few steps
// up, which a search from the node's dependencies finds at once; a node
// many refer to from far below (a spec every step of a long chain reads)
// gets its transitive dependents found once and kept. So a run file whose
// every node reads an earlier result is checked in time about linear in
// its size, not quadratic, as a search of all a node's dependencies per
// node was.
type reachOf struct {
	byID map[string]*nodeInfo
	// dependents are, by id, the nodes that list it in depends_on;
	// built on first need.
	dependents map[string][]string
	// below are, by id, the nodes that depend on it, directly or not;
	// filled per target on first need, while kept, the ids they hold
	// together, is under keptPerNode per node.
	below map[string]map[string]bool
	kept  int
	// lastDeps and lastAll: the depends_on last searched in full (past
	// the budget) and every id it reaches, for that node's next reference.
	lastDeps []string
	lastAll  map[string]bool
}

// keptPerNode bounds the dependents reachOf keeps, as ids per node of the
// run file: each far target keeps a set of up to all the nodes, and a
// file whose nodes each read a different far result would keep one per
// node (memory quadratic in the nodes). Past it, a far target
// is looked for among all of the node's dependencies, searched once per
// node, as before the sets were kept.
const keptPerNode = 8

func newReachOf(byID map[string]*nodeInfo) *reachOf {
	return &reachOf{byID: byID}
}

// dependsOn reports whether target is one of deps or a transitive
// dependency of one of them (an id in deps or on the way that names no
// node counts itself and leads nowhere further).
func (r *reachOf) dependsOn(deps []string, target string) bool {
	if slices.Contains(deps, target) {
		return true
	}
	if found, sure := r.near(deps, target); sure {
		return found
	}
	if _, ok := r.below[target]; ok || r.kept < keptPerNode*len(r.byID) {
		return r.dependentsOf(target, deps)
	}
	return r.all(deps)[target]
}

// all returns every id deps reaches, itself included, searched once for
// the deps of the node last asked about.
func (r *reachOf) all(deps []string) map[string]bool {
	if len(deps) > 0 && len(deps) == len(r.lastDeps) && &deps[0] == &r.lastDeps[0] {
		return r.lastAll
	}
	seen := map[string]bool{}
	queue := append([]string{}, deps...)
	for len(queue) > 0 {
		id := queue[0]
		queue = queue[1:]
		if seen[id] {
			continue
		}
		seen[id] = true
		if next, ok := r.byID[id]; ok {
			queue = append(queue, next.n.DependsOn...)
		}
	}
	r.lastDeps, r.lastAll = deps, seen
	return seen
}

// near searches from deps for target, visiting at most nearLimit nodes;
// sure is false when it stopped before knowing.
func (r *reachOf) near(deps []string, target string) (found, sure bool) {
	seen := make(map[string]bool, nearLimit)
	queue := append(make([]string, 0, nearLimit), deps...)
	for len(queue) > 0 {
		id := queue[0]
		queue = queue[1:]
		if seen[id] {
			continue
		}
		if id == target {
			return true, true
		}
		if len(seen) == nearLimit {
			return false, false
		}
		seen[id] = true
		if next, ok := r.byID[id]; ok {
			queue = append(queue, next.n.DependsOn...)
		}
	}
	return false, true
}

// dependentsOf reports whether a node whose depends_on is deps depends on
// target through one of deps: one of them is target or depends on it.
func (r *reachOf) dependentsOf(target string, deps []string) bool {
	below := r.belowOf(target)
	for _, d := range deps {
		if d == target || below[d] {
			return true
		}
	}
	return false
}

// belowOf returns the ids that depend on target, directly or through
// other nodes, found once per target.
func (r *reachOf) belowOf(target string) map[string]bool {
	if b, ok := r.below[target]; ok {
		return b
	}
	if r.dependents == nil {
		r.dependents = map[string][]string{}
		for id, info := range r.byID {
			for _, d := range info.n.DependsOn {
				r.dependents[d] = append(r.dependents[d], id)
			}
		}
		r.below = map[string]map[string]bool{}
	}
	b := map[string]bool{}
	queue := append([]string{}, r.dependents[target]...)
	for len(queue) > 0 {
		id := queue[0]
		queue = queue[1:]
		if b[id] {
			continue
		}
		b[id] = true
		queue = append(queue, r.dependents[id]...)
	}
	r.below[target] = b
	r.kept += len(b)
	return b
}
