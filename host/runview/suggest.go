package runview

import (
	"fmt"
	"strings"

	"github.com/agext/levenshtein"

	"github.com/obversa/obversa/host/runstate"
)

// SuggestPosition returns the position a mistyped position argument most
// likely meant, or "": the current position of a node named by its id
// ("draft" for "dag/draft/1"), else the closest position the record knows
// or a node is at, when it is a likely typo.
func SuggestPosition(st *runstate.State, given string) string {
	g := st.Graph()
	if n := g.Node(given); n != nil && n.Position != "" {
		return n.Position
	}
	var known []string
	for _, n := range g.Nodes() {
		if n.Position != "" {
			known = append(known, n.Position)
		}
	}
	return Closest(given, known)
}

// SuggestNode returns the node id a mistyped node argument most likely
// meant, or "": the node of a position the record knows, the node a
// position names (dag/<node>/<n>), else the closest id.
func SuggestNode(st *runstate.State, given string) string {
	g := st.Graph()
	if n := g.AtPosition(given); n != nil {
		return n.Def.ID
	}
	var ids []string
	for _, n := range g.Nodes() {
		ids = append(ids, n.Def.ID)
	}
	if parts := strings.Split(given, "/"); len(parts) >= 3 {
		// A position of a node that has none yet, or mistyped:
		// dag/<node>/<n> names the node in its middle.
		given = parts[len(parts)-2]
		if g.Node(given) != nil {
			return given
		}
	}
	return Closest(given, ids)
}

// DidYouMean returns ` (did you mean "x"?)` for a suggestion, "" for none.
func DidYouMean(suggestion string) string {
	if suggestion == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", suggestion)
}

// Closest returns the candidate nearest to given when the distance is
// small for its length (at most a third of it, and at least 2 allowed).
func Closest(given string, candidates []string) string {
	best, bestDist := "", max(2, len(given)/3)+1
	for _, c := range candidates {
		if d := levenshtein.Distance(strings.ToLower(given), strings.ToLower(c), nil); d < bestDist {
			best, bestDist = c, d
		}
	}
	return best
}
