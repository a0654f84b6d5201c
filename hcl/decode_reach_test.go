package hcl

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// searchAll is the plain answer reachOf must give: a search of every
// transitive dependency of deps.
func searchAll(byID map[string]*nodeInfo, deps []string, target string) bool {
	seen := map[string]bool{}
	queue := append([]string{}, deps...)
	for len(queue) > 0 {
		id := queue[0]
		queue = queue[1:]
		if seen[id] {
			continue
		}
		seen[id] = true
		if next, ok := byID[id]; ok {
			queue = append(queue, next.n.DependsOn...)
		}
	}
	return seen[target]
}

// TestReachOfAnswersAsAFullSearch compares reachOf with a search of all
// dependencies on random DAGs large enough that many answers come from
// the targets' dependents (past nearLimit), with ids that name no node
// among the dependencies.
func TestReachOfAnswersAsAFullSearch(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 7))
		n := 50 + rng.IntN(400)
		byID := map[string]*nodeInfo{}
		ids := make([]string, n)
		for i := range n {
			ids[i] = fmt.Sprintf("n%d", i)
			var deps []string
			for range rng.IntN(3) + 1 {
				if i > 0 {
					// Mostly near, sometimes far back.
					j := i - 1 - rng.IntN(min(i, 4))
					if rng.IntN(5) == 0 {
						j = rng.IntN(i)
					}
					deps = append(deps, ids[j])
				}
			}
			if rng.IntN(20) == 0 {
				deps = append(deps, "ghost")
			}
			byID[ids[i]] = &nodeInfo{n: &Node{ID: ids[i], DependsOn: deps}}
		}
		r := newReachOf(byID)
		for range 400 {
			from := byID[ids[rng.IntN(n)]]
			target := ids[rng.IntN(n)]
			if rng.IntN(50) == 0 {
				target = "ghost"
			}
			want := searchAll(byID, from.n.DependsOn, target)
			if got := r.dependsOn(from.n.DependsOn, target); got != want {
				t.Fatalf("seed %d: %s depends on %s: got %v, want %v", seed, from.n.ID, target, got, want)
			}
		}
	}
}

// TestFarReferencesInALongChain decodes a chain in which every node reads
// the first node's result, far past the near search, and one in which a
// node reads the result of a node below it: the first decodes, the second
// is refused naming the missing dependency.
func TestFarReferencesInALongChain(t *testing.T) {
	chain := func(n int, extra string) []byte {
		var b strings.Builder
		b.WriteString(prelude)
		b.WriteString("graph \"dag\" {\n  node \"n0\" {\n    lane   = \"writer\"\n    prompt = \"start\"\n  }\n")
		for i := 1; i < n; i++ {
			fmt.Fprintf(&b, "  node \"n%d\" {\n    lane       = \"writer\"\n    depends_on = [\"n%d\"]\n    prompt     = \"Spec: ${input.results.n0}%s\"\n  }\n", i, i-1, strings.ReplaceAll(extra, "I", fmt.Sprint(i)))
		}
		b.WriteString("}\n")
		return []byte(b.String())
	}
	if _, diags := Decode(chain(300, ""), "/proj/run.hcl"); diags.HasErrors() {
		t.Fatalf("every node reading n0: %v", diags)
	}
	src := chain(300, "")
	src = []byte(strings.Replace(string(src), "prompt     = \"Spec: ${input.results.n0}\"\n  }\n  node \"n151\"", "prompt     = \"Spec: ${input.results.n299}\"\n  }\n  node \"n151\"", 1))
	_, diags := Decode(src, "/proj/run.hcl")
	if !diags.HasErrors() || !strings.Contains(diags.Error(), `Node "n150" does not depend on "n299"`) {
		t.Fatalf("n150 reading n299: want a refusal, got %v", diags)
	}
}

// TestReachOfKeepsBoundedDependents: a chain whose every node reads the
// result of a different node far above it (past nearLimit) gets the
// answers of a full search while reachOf keeps at most keptPerNode ids
// per node (one more target's worth past it); it kept every far target's
// dependents, memory quadratic in the nodes.
func TestReachOfKeepsBoundedDependents(t *testing.T) {
	t.Parallel()
	const n, back = 1500, nearLimit + 6
	byID := map[string]*nodeInfo{}
	ids := make([]string, n)
	for i := range n {
		ids[i] = fmt.Sprintf("n%d", i)
		var deps []string
		if i > 0 {
			deps = []string{ids[i-1]}
		}
		byID[ids[i]] = &nodeInfo{n: &Node{ID: ids[i], DependsOn: deps}}
	}
	r := newReachOf(byID)
	for i := back; i < n; i++ {
		deps := byID[ids[i]].n.DependsOn
		for _, target := range []string{ids[i-back], ids[(i+back)%n], ids[i]} {
			if got, want := r.dependsOn(deps, target), searchAll(byID, deps, target); got != want {
				t.Fatalf("does %s depend on %s: %v, a full search says %v", ids[i], target, got, want)
			}
		}
	}
	kept := 0
	for _, b := range r.below {
		kept += len(b)
	}
	if max := (keptPerNode + 1) * n; kept > max {
		t.Fatalf("reachOf keeps %d ids of dependents for %d nodes, more than %d", kept, n, max)
	}
}
