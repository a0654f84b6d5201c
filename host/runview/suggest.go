package runview

import (
	"fmt"
	"slices"
	"strings"

	"github.com/agext/levenshtein"

	"github.com/obversa/obversa/host/runstate"
)

// SuggestPosition returns the position a mistyped position argument most
// likely meant, or "": the current position of a node named by its id or
// a unit by its name ("draft" for "dag/draft/1", "lint[a.go]" for
// "dag/lint[a.go]/1"), else the closest position the record knows or a
// node is at, when it is a likely typo.
func SuggestPosition(st *runstate.State, given string) string {
	g := st.Graph()
	if n := Unit(g, given); n != nil && n.Position != "" {
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

// SuggestPaused returns the paused position a mistyped position argument
// of approve or resume most likely meant, or "": SuggestPosition's answer
// when that position is paused, else the closest paused position. Only a
// paused position can be decided or offered again.
func SuggestPaused(st *runstate.State, given string) string {
	paused := st.PausedPositions()
	if s := SuggestPosition(st, given); slices.Contains(paused, s) {
		return s
	}
	return Closest(given, paused)
}

// SuggestNode returns the node a mistyped node argument most likely
// meant, or "": the unit at a position the record knows (by its name,
// Node.ID), the node a position names (dag/<node>/<n>), else the closest
// node id or unit name.
func SuggestNode(st *runstate.State, given string) string {
	g := st.Graph()
	if n := g.AtPosition(given); n != nil {
		return n.Name()
	}
	var ids []string
	for _, v := range g.Vertices() {
		ids = append(ids, v.Def.ID)
	}
	for _, n := range g.Nodes() {
		if n.Instance || n.Loop != "" {
			ids = append(ids, n.Name())
		}
	}
	if parts := strings.Split(given, "/"); len(parts) >= 3 && parts[0] == "dag" {
		// A position of a node that has none yet, or mistyped:
		// dag/<name>/<n> names the node in its middle.
		given = strings.Join(parts[1:len(parts)-1], "/")
		if g.Vertex(given) != nil {
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
