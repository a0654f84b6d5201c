package graph

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/obversa/obversa/host/snapcodec"
)

// The graph's part of a fold snapshot (docs/architecture.md, "Fold
// snapshot"). A snapshot keeps what folding the record up to a revision
// left in the State, so a reader restores it and folds only the events
// after it. The shape is a flat mirror of the State, written field by
// field (host/snapcodec): units are numbered in the order they came to be
// (State.units) and every pointer between them becomes such a number; the
// definition is not in it — the reader restores the State onto the
// record's own graph:run-started (Prepare, Shaping.Restore) and the snapshot fills in what
// the events changed. The decision index is saved whole, counters and
// sets alike, so a restored State is the State the full fold builds, not
// one rebuilt by a second set of rules; a restore sets up only the
// definition's shape (vertices, plain nodes' units; the edges and the
// look-up by id are built only when an event or a reader needs them).
//
// Event data the State holds by pointer (a failure, a pause, a policy
// decision, an expansion, a loop's checks) is kept as its JSON: it came
// from JSON, it is rare, and JSON keeps a pointer to a zero value and an
// empty list as they were.

// ErrSnapshot is returned (wrapped) when a snapshot's graph part does not
// decode or does not fit the definition it is restored onto.
var ErrSnapshot = errors.New("fold snapshot does not fit the graph")

// Shaping is a restore of a snapshot onto a definition, begun with the
// part that needs only the definition — its shape: vertices, plain
// nodes' units (Prepare) — so that the caller reads the parts of its
// snapshot before the graph's meanwhile; on a large definition the shape
// costs as much as the rest of the restore. Shaping.Restore reads the
// graph's part.
type Shaping struct {
	done chan struct{}
	s    *State
}

// prepareOnGoroutine is the number of nodes from which Prepare shapes on
// a goroutine of its own; a smaller one is shaped at once.
const prepareOnGoroutine = 1024

// Prepare begins a restore onto def, the definition the snapshot's
// State was folded from, setting up its shape on a goroutine of its own
// for a definition of many nodes. def is not validated again: a snapshot
// exists only of a State that New accepted it for (its header ties it to
// the record that holds def). def must not change until Restore returns.
func Prepare(def *Definition) *Shaping {
	p := &Shaping{done: make(chan struct{})}
	if len(def.Nodes) < prepareOnGoroutine {
		p.s = shape(def)
		close(p.done)
		return p
	}
	go func() {
		defer close(p.done)
		p.s = shape(def)
	}()
	return p
}

// Restore returns the State a snapshot written by EncodeSnapshot holds
// on the definition given to Prepare, reading the graph's part from r
// once the shape is set up. A Shaping serves one Restore. Errors: an
// error wrapping ErrSnapshot (and snapcodec.ErrCorrupt when the bytes do
// not decode) when the snapshot does not fit the definition, or when the
// Shaping was restored onto already.
func (p *Shaping) Restore(r *snapcodec.Reader) (*State, error) {
	<-p.done
	s := p.s
	p.s = nil
	if s == nil {
		return nil, fmt.Errorf("%w: the shape was restored onto already", ErrSnapshot)
	}
	if err := s.decodeSnapshot(r); err != nil {
		return nil, err
	}
	return s, nil
}

// shape returns the State of def as New does, but for the decision
// index's counters and sets, which a restore reads from its snapshot:
// vertices and the plain nodes' units. The look-up by id and the edges
// are built when first needed (State.link).
func shape(def *Definition) *State {
	n := len(def.Nodes)
	s := &State{def: def, vertices: make([]*VertexState, n), keyed: map[string]int{}, keyLimit: map[string]int{}}
	vs := make([]VertexState, n)
	plain := 0
	for i := range def.Nodes {
		if d := &def.Nodes[i]; d.Loop == nil && d.ForEach == nil {
			plain++
		}
	}
	units := make([]NodeState, plain)
	s.units = make([]*NodeState, 0, plain)
	for i := range def.Nodes {
		d := &def.Nodes[i]
		v := &vs[i]
		*v = VertexState{Def: d}
		v.ix.idx = i
		switch {
		case d.Loop != nil:
			v.Loop = &LoopState{}
		case d.ForEach == nil:
			u := &units[len(s.units)]
			*u = NodeState{Def: d, Vertex: d.ID, v: v}
			v.Unit = s.newUnit(u)
		}
		s.vertices[i] = v
	}
	for _, k := range def.KeyedConcurrency {
		s.keyLimit[k.Key] = k.Limit
	}
	return s
}

func (s *State) decodeSnapshot(r *snapcodec.Reader) error {
	// shape made the plain nodes' units; the snapshot lists them first,
	// in the same order, then the instances and members.
	plain := s.units
	nu := r.Len()
	if nu != len(plain) {
		// Instances or members too: a list of its own (a graph of plain
		// nodes keeps shape's, whose units come back in place).
		s.units = make([]*NodeState, nu)
	}
	var extra []NodeState
	if nu > len(plain) {
		extra = make([]NodeState, nu-len(plain))
	}
	for i := range nu {
		if err := s.restoreUnit(r, i, plain, extra); err != nil {
			return err
		}
	}
	if nv := r.Len(); nv != len(s.vertices) {
		if err := r.Err(); err != nil {
			return fmt.Errorf("%w: %w", ErrSnapshot, err)
		}
		return fmt.Errorf("%w: %d vertices, the definition has %d", ErrSnapshot, nv, len(s.vertices))
	}
	for _, v := range s.vertices {
		if err := s.restoreVertex(r, v); err != nil {
			return fmt.Errorf("vertex %q: %w", v.Def.ID, err)
		}
	}
	np := r.Len()
	s.byPos = make(map[string]*NodeState, np)
	for range np {
		p, u := r.Str(), r.Uint()
		if u >= uint64(len(s.units)) {
			return fmt.Errorf("%w: position %q names unit %d of %d", ErrSnapshot, p, u, len(s.units))
		}
		s.byPos[p] = s.units[u]
	}
	for range r.Len() {
		k := r.Str()
		s.keyed[k] = int(r.Int())
	}
	s.inflight, s.dispatched, s.stopped = int(r.Int()), int(r.Int()), r.Bool()
	if err := restoreBits(r, &s.idx.stepping, len(s.vertices)); err != nil {
		return err
	}
	if err := restoreBits(r, &s.idx.dispatching, len(s.vertices)); err != nil {
		return err
	}
	s.idx.paused, s.idx.open, s.idx.openActive = int(r.Int()), int(r.Int()), int(r.Int())
	if err := r.Err(); err != nil {
		return fmt.Errorf("%w: %w", ErrSnapshot, err)
	}
	return nil
}

// restoreUnit reads unit i of a snapshot: plain nodes reuse the units
// shape made (in order), so their vertex keeps pointing at them; the
// others are made in extra.
func (s *State) restoreUnit(r *snapcodec.Reader, i int, plain []*NodeState, extra []NodeState) error {
	vx, member, instance := r.Uint(), r.Uint(), r.Bool()
	key, loop, round, idx := r.Str(), r.Str(), int(r.Int()), int(r.Int())
	status := Status(r.Int())
	if err := r.Err(); err != nil {
		return fmt.Errorf("%w: unit %d: %w", ErrSnapshot, i, err)
	}
	if vx >= uint64(len(s.vertices)) {
		return fmt.Errorf("%w: unit %d names vertex %d of %d", ErrSnapshot, i, vx, len(s.vertices))
	}
	if status < StatusIdle || int(status) >= len(statusNames) {
		return fmt.Errorf("%w: unit %d has status %d", ErrSnapshot, i, status)
	}
	v := s.vertices[vx]
	var n *NodeState
	switch {
	case i < len(plain):
		if n = plain[i]; n.v != v || instance || loop != "" {
			return fmt.Errorf("%w: unit %d is not node %q", ErrSnapshot, i, n.Vertex)
		}
	case loop != "":
		if v.Loop == nil || member < 1 || member > uint64(len(v.Def.Loop.Members)) || loop != v.Def.ID {
			return fmt.Errorf("%w: unit %d is no member of a loop %q", ErrSnapshot, i, v.Def.ID)
		}
		n = &extra[i-len(plain)]
		*n = NodeState{Def: &v.Def.Loop.Members[member-1], Vertex: v.Def.ID, Loop: loop, Round: round, v: v}
	case instance:
		if v.Def.ForEach == nil {
			return fmt.Errorf("%w: unit %d is an instance of %q, which has no for_each", ErrSnapshot, i, v.Def.ID)
		}
		n = &extra[i-len(plain)]
		*n = NodeState{Def: v.Def, Vertex: v.Def.ID, Instance: true, Key: key, v: v, idx: idx}
	default:
		return fmt.Errorf("%w: unit %d is neither a node, an instance nor a member", ErrSnapshot, i)
	}
	n.Status, n.Attempts, n.Position, n.RetrySafe = status, int(r.Int()), r.Str(), r.Bool()
	n.AttemptStarted, n.Approved, n.VerdictFailure = r.Bool(), r.Str(), r.Bool()
	n.Result = r.Bytes()
	var j jsonParts
	n.ResultArtifact = fromJSON[ArtifactRef](&j, r.Bytes())
	n.Failure = fromJSON[FailedData](&j, r.Bytes())
	n.Pause = fromJSON[PauseRequest](&j, r.Bytes())
	n.Decision = fromJSON[ActionDecidedData](&j, r.Bytes())
	if err := errors.Join(r.Err(), j.err); err != nil {
		return fmt.Errorf("%w: unit %d: %w", ErrSnapshot, i, err)
	}
	s.units[i] = n
	return nil
}

// restoreVertex reads v's part of a snapshot.
func (s *State) restoreVertex(r *snapcodec.Reader, v *VertexState) error {
	units := func(want func(*NodeState) bool) ([]*NodeState, error) {
		n := r.Len()
		if n == 0 {
			return nil, nil
		}
		out := make([]*NodeState, n)
		for i := range out {
			k := r.Uint()
			if k >= uint64(len(s.units)) || s.units[k].v != v || !want(s.units[k]) {
				return nil, fmt.Errorf("%w: unit %d does not belong here", ErrSnapshot, k)
			}
			out[i] = s.units[k]
		}
		return out, nil
	}
	unit := r.Uint()
	var err error
	if v.Instances, err = units(func(n *NodeState) bool { return n.Instance }); err != nil {
		return err
	}
	var j jsonParts
	v.Expansion = fromJSON[ExpandedData](&j, r.Bytes())
	v.failure = fromJSON[FailedData](&j, r.Bytes())
	hasLoop := r.Bool()
	switch {
	case v.Unit != nil:
		if unit < 1 || unit > uint64(len(s.units)) || s.units[unit-1] != v.Unit || len(v.Instances) > 0 || hasLoop {
			return fmt.Errorf("%w: a node's unit is not its own", ErrSnapshot)
		}
	case v.Loop != nil:
		if !hasLoop || len(v.Instances) > 0 {
			return fmt.Errorf("%w: a loop has no loop state", ErrSnapshot)
		}
	case hasLoop || unit != 0:
		return fmt.Errorf("%w: a for_each node has a unit or loop state", ErrSnapshot)
	}
	for i, n := range v.Instances {
		if n.idx != i {
			return fmt.Errorf("%w: instance %d has index %d", ErrSnapshot, i, n.idx)
		}
	}
	if hasLoop {
		v.Loop.Started, v.Loop.Finished = r.Bool(), fromJSON[LoopFinishedData](&j, r.Bytes())
		for range r.Len() {
			rs := &RoundState{Round: int(r.Int())}
			if rs.Members, err = units(func(n *NodeState) bool { return n.Loop != "" && n.Round == rs.Round }); err != nil {
				return err
			}
			rs.Condition, rs.Review = fromJSON[ConditionData](&j, r.Bytes()), fromJSON[ReviewedData](&j, r.Bytes())
			v.Loop.Rounds = append(v.Loop.Rounds, rs)
		}
	}
	v.passed, v.failed = int(r.Int()), int(r.Int())
	v.ix.pending, v.ix.blocked, v.ix.byDep, v.ix.green, v.ix.hard = int(r.Int()), r.Bool(), r.Bool(), r.Bool(), r.Bool()
	v.ix.active, v.ix.open, v.ix.openActive = int(r.Int()), r.Bool(), r.Bool()
	if err := errors.Join(r.Err(), j.err); err != nil {
		return fmt.Errorf("%w: %w", ErrSnapshot, err)
	}
	if v.Expansion != nil && v.Expansion.Code == "" {
		return restoreBits(r, &v.ix.idle, len(v.Expansion.Keys))
	}
	var none bitSet
	if err := restoreBits(r, &none, 0); err != nil {
		return fmt.Errorf("%w: idle instances without an expansion", ErrSnapshot)
	}
	return nil
}

// saveBits writes b's words and summary words.
func saveBits(w *snapcodec.Writer, b bitSet) {
	for _, ws := range [][]uint64{b.words, b.summary} {
		w.Uint(uint64(len(ws)))
		for _, x := range ws {
			w.Uint(x)
		}
	}
}

// restoreBits reads into b a set of n members.
func restoreBits(r *snapcodec.Reader, b *bitSet, n int) error {
	*b = newBitSet(n)
	for _, ws := range [][]uint64{b.words, b.summary} {
		if k := r.Len(); k != len(ws) {
			if err := r.Err(); err != nil {
				return fmt.Errorf("%w: %w", ErrSnapshot, err)
			}
			return fmt.Errorf("%w: a set of %d members has %d words where it needs %d", ErrSnapshot, n, k, len(ws))
		}
		for i := range ws {
			ws[i] = r.Uint()
		}
	}
	if err := r.Err(); err != nil {
		return fmt.Errorf("%w: %w", ErrSnapshot, err)
	}
	return nil
}

// jsonParts marshals and unmarshals the event data a snapshot keeps as
// JSON, keeping the first error.
type jsonParts struct{ err error }

func toJSON[T any](j *jsonParts, p *T) []byte {
	if j.err != nil || p == nil {
		return nil
	}
	b, err := json.Marshal(p)
	if err != nil {
		j.err = err
	}
	return b
}

func fromJSON[T any](j *jsonParts, b []byte) *T {
	if j.err != nil || b == nil {
		return nil
	}
	v := new(T)
	if err := json.Unmarshal(b, v); err != nil {
		j.err = fmt.Errorf("%w: %w", ErrSnapshot, err)
		return nil
	}
	return v
}
