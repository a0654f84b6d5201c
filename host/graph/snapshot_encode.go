package graph

import (
	"maps"
	"slices"

	"github.com/obversa/obversa/host/snapcodec"
)

// The writing half of the graph's part of a fold snapshot; snapshot.go
// describes the shape and restores it.

// EncodeSnapshot writes the state's snapshot to w. Errors: a marshal
// error of held event data (none for data that came from the record).
func (s *State) EncodeSnapshot(w *snapcodec.Writer) error {
	num := make(map[*NodeState]int, len(s.units))
	for i, n := range s.units {
		num[n] = i
	}
	var j jsonParts
	w.Uint(uint64(len(s.units)))
	for _, n := range s.units {
		encodeUnit(w, &j, n)
	}
	w.Uint(uint64(len(s.vertices)))
	for _, v := range s.vertices {
		encodeVertex(w, &j, num, v)
	}
	// Sorted, so a State always encodes alike.
	w.Uint(uint64(len(s.byPos)))
	for _, p := range slices.Sorted(maps.Keys(s.byPos)) {
		w.Str(p)
		w.Uint(uint64(num[s.byPos[p]]))
	}
	w.Uint(uint64(len(s.keyed)))
	for _, k := range slices.Sorted(maps.Keys(s.keyed)) {
		w.Str(k)
		w.Int(int64(s.keyed[k]))
	}
	w.Int(int64(s.inflight))
	w.Int(int64(s.dispatched))
	w.Bool(s.stopped)
	saveBits(w, s.idx.stepping)
	saveBits(w, s.idx.dispatching)
	w.Int(int64(s.idx.paused))
	w.Int(int64(s.idx.open))
	w.Int(int64(s.idx.openActive))
	return j.err
}

// encodeUnit writes one unit of EncodeSnapshot; a loop member is named
// by its place among its loop's members (1-based; 0 for none).
func encodeUnit(w *snapcodec.Writer, j *jsonParts, n *NodeState) {
	member := 0
	if n.Loop != "" {
		for k := range n.v.Def.Loop.Members {
			if n.Def == &n.v.Def.Loop.Members[k] {
				member = k + 1
			}
		}
	}
	w.Uint(uint64(n.v.ix.idx))
	w.Uint(uint64(member))
	w.Bool(n.Instance)
	w.Str(n.Key)
	w.Str(n.Loop)
	w.Int(int64(n.Round))
	w.Int(int64(n.idx))
	w.Int(int64(n.Status))
	w.Int(int64(n.Attempts))
	w.Str(n.Position)
	w.Bool(n.RetrySafe)
	w.Bool(n.AttemptStarted)
	w.Str(n.Approved)
	w.Bool(n.VerdictFailure)
	w.Bytes(n.Result)
	w.Bytes(toJSON(j, n.ResultArtifact))
	w.Bytes(toJSON(j, n.Failure))
	w.Bytes(toJSON(j, n.Pause))
	w.Bytes(toJSON(j, n.Decision))
}

// encodeVertex writes one vertex of EncodeSnapshot, its units by their
// numbers in num (Unit 0 for none, else its number plus one).
func encodeVertex(w *snapcodec.Writer, j *jsonParts, num map[*NodeState]int, v *VertexState) {
	unit := 0
	if v.Unit != nil {
		unit = num[v.Unit] + 1
	}
	w.Uint(uint64(unit))
	writeNums(w, num, v.Instances)
	w.Bytes(toJSON(j, v.Expansion))
	w.Bytes(toJSON(j, v.failure))
	w.Bool(v.Loop != nil)
	if l := v.Loop; l != nil {
		w.Bool(l.Started)
		w.Bytes(toJSON(j, l.Finished))
		w.Uint(uint64(len(l.Rounds)))
		for _, r := range l.Rounds {
			w.Int(int64(r.Round))
			writeNums(w, num, r.Members)
			w.Bytes(toJSON(j, r.Condition))
			w.Bytes(toJSON(j, r.Review))
		}
	}
	w.Int(int64(v.passed))
	w.Int(int64(v.failed))
	w.Int(int64(v.ix.pending))
	w.Bool(v.ix.blocked)
	w.Bool(v.ix.byDep)
	w.Bool(v.ix.green)
	w.Bool(v.ix.hard)
	w.Int(int64(v.ix.active))
	w.Bool(v.ix.open)
	w.Bool(v.ix.openActive)
	saveBits(w, v.ix.idle)
}

// writeNums writes the numbers of us in num, after their count.
func writeNums(w *snapcodec.Writer, num map[*NodeState]int, us []*NodeState) {
	w.Uint(uint64(len(us)))
	for _, u := range us {
		w.Uint(uint64(num[u]))
	}
}
