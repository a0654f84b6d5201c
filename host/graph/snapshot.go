package graph

import (
	"encoding/gob"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
)

// The graph's part of a fold snapshot (docs/architecture.md, "Fold
// snapshot"). A snapshot keeps what folding the record up to a revision
// left in the State, so a reader restores it and folds only the events
// after it. The shape is a flat mirror of the State: units are numbered in
// the order they came to be (State.units) and every pointer between them
// becomes such a number; the definition is not in it — the reader builds
// the State from the record's own graph:run-started (New) and the
// snapshot fills in what the events changed. The decision index is saved
// whole, counters and sets alike, so a restored State is the State the
// full fold builds, not one rebuilt by a second set of rules.
//
// Event data the State holds by pointer (a failure, a pause, a policy
// decision, an expansion, a loop's checks) is kept as its JSON: it came
// from JSON, it is rare, and JSON keeps what gob would lose (an empty
// list stays empty, a pointer to a zero value stays set).

// ErrSnapshot is returned (wrapped) when a snapshot's graph part does not
// decode or does not fit the definition it is restored onto.
var ErrSnapshot = errors.New("fold snapshot does not fit the graph")

type unitSnap struct {
	Vertex         int // index of the unit's vertex in the definition
	Member         int // 1-based index of a loop member's definition; 0 otherwise
	Instance       bool
	Key            string
	Loop           string
	Round          int
	Idx            int
	Status         Status
	Attempts       int
	Position       string
	RetrySafe      bool
	AttemptStarted bool
	Approved       string
	VerdictFailure bool
	Result         []byte
	ResultSet      bool // Result was non-nil (gob sends an empty slice as none)
	Artifact       []byte
	Failure        []byte
	Pause          []byte
	Decision       []byte
}

type vertexSnap struct {
	Unit      int // 1-based index of a plain node's unit; 0 otherwise
	Instances []int
	Expansion []byte
	Failure   []byte
	Loop      *loopSnap
	Passed    int
	Failed    int

	Pending    int
	Blocked    bool
	ByDep      bool
	Green      bool
	Hard       bool
	Active     int
	Open       bool
	OpenActive bool
	Idle       bitSnap
}

type loopSnap struct {
	Started  bool
	Rounds   []roundSnap
	Finished []byte
}

type roundSnap struct {
	Round     int
	Members   []int
	Condition []byte
	Review    []byte
}

type posUnit struct {
	Position string
	Unit     int
}

type keyCount struct {
	Key   string
	Count int
}

type bitSnap struct{ Words, Summary []uint64 }

type stateSnap struct {
	Units       []unitSnap
	Vertices    []vertexSnap
	ByPos       []posUnit // sorted by position, so a State always encodes alike
	Inflight    int
	Dispatched  int
	Keyed       []keyCount // sorted by key
	Stopped     bool
	Stepping    bitSnap
	Dispatching bitSnap
	Paused      int
	Open        int
	OpenActive  int
}

// EncodeSnapshot writes the state's snapshot to enc (one gob value).
// Errors: enc's, and a marshal error of held event data (none for data
// that came from the record).
func (s *State) EncodeSnapshot(enc *gob.Encoder) error {
	num := make(map[*NodeState]int, len(s.units))
	for i, n := range s.units {
		num[n] = i
	}
	nums := func(us []*NodeState) []int {
		out := make([]int, len(us))
		for i, u := range us {
			out[i] = num[u]
		}
		return out
	}
	var j jsonParts
	ss := stateSnap{Units: make([]unitSnap, len(s.units)), Vertices: make([]vertexSnap, len(s.vertices)),
		ByPos: make([]posUnit, 0, len(s.byPos)), Inflight: s.inflight, Dispatched: s.dispatched,
		Stopped: s.stopped, Stepping: saveBits(s.idx.stepping), Dispatching: saveBits(s.idx.dispatching), Paused: s.idx.paused,
		Open: s.idx.open, OpenActive: s.idx.openActive}
	for i, n := range s.units {
		u := unitSnap{Vertex: n.v.ix.idx, Instance: n.Instance, Key: n.Key, Loop: n.Loop, Round: n.Round, Idx: n.idx,
			Status: n.Status, Attempts: n.Attempts, Position: n.Position, RetrySafe: n.RetrySafe,
			AttemptStarted: n.AttemptStarted, Approved: n.Approved, VerdictFailure: n.VerdictFailure,
			Result: n.Result, ResultSet: n.Result != nil,
			Artifact: toJSON(&j, n.ResultArtifact), Failure: toJSON(&j, n.Failure), Pause: toJSON(&j, n.Pause), Decision: toJSON(&j, n.Decision)}
		if n.Loop != "" {
			for k := range n.v.Def.Loop.Members {
				if n.Def == &n.v.Def.Loop.Members[k] {
					u.Member = k + 1
				}
			}
		}
		ss.Units[i] = u
	}
	for i, v := range s.vertices {
		vs := vertexSnap{Instances: nums(v.Instances), Expansion: toJSON(&j, v.Expansion), Failure: toJSON(&j, v.failure),
			Passed: v.passed, Failed: v.failed, Pending: v.ix.pending, Blocked: v.ix.blocked, ByDep: v.ix.byDep, Green: v.ix.green,
			Hard: v.ix.hard, Active: v.ix.active, Open: v.ix.open, OpenActive: v.ix.openActive, Idle: saveBits(v.ix.idle)}
		if v.Unit != nil {
			vs.Unit = num[v.Unit] + 1
		}
		if l := v.Loop; l != nil {
			ls := &loopSnap{Started: l.Started, Finished: toJSON(&j, l.Finished)}
			for _, r := range l.Rounds {
				ls.Rounds = append(ls.Rounds, roundSnap{Round: r.Round, Members: nums(r.Members),
					Condition: toJSON(&j, r.Condition), Review: toJSON(&j, r.Review)})
			}
			vs.Loop = ls
		}
		ss.Vertices[i] = vs
	}
	for _, p := range slices.Sorted(maps.Keys(s.byPos)) {
		ss.ByPos = append(ss.ByPos, posUnit{p, num[s.byPos[p]]})
	}
	for _, k := range slices.Sorted(maps.Keys(s.keyed)) {
		ss.Keyed = append(ss.Keyed, keyCount{k, s.keyed[k]})
	}
	if j.err != nil {
		return j.err
	}
	return enc.Encode(&ss)
}

// Restore returns the state a snapshot written by EncodeSnapshot holds,
// on def, the definition that state was folded from. def is not
// validated again: a snapshot exists only of a State that New accepted
// it for (its header ties it to the record that holds def). Errors: an
// error wrapping ErrSnapshot when the snapshot does not decode or does
// not fit def.
func Restore(def *Definition, dec *gob.Decoder) (*State, error) {
	s := build(def)
	if err := s.decodeSnapshot(dec); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *State) decodeSnapshot(dec *gob.Decoder) error {
	var ss stateSnap
	if err := dec.Decode(&ss); err != nil {
		return fmt.Errorf("%w: %v", ErrSnapshot, err)
	}
	if len(ss.Vertices) != len(s.vertices) {
		return fmt.Errorf("%w: %d vertices, the definition has %d", ErrSnapshot, len(ss.Vertices), len(s.vertices))
	}
	// New made the plain nodes' units; the snapshot lists them first, in
	// the same order, then the instances and members.
	plain := s.units
	s.units = make([]*NodeState, len(ss.Units))
	s.byPos = make(map[string]*NodeState, len(ss.ByPos))
	var err error
	for i := range ss.Units {
		if s.units[i], err = s.restoreUnit(&ss.Units[i], i, plain); err != nil {
			return err
		}
	}
	for i := range ss.Vertices {
		if err := s.restoreVertex(s.vertices[i], &ss.Vertices[i]); err != nil {
			return fmt.Errorf("vertex %q: %w", s.vertices[i].Def.ID, err)
		}
	}
	for _, p := range ss.ByPos {
		if p.Unit < 0 || p.Unit >= len(s.units) {
			return fmt.Errorf("%w: position %q names unit %d of %d", ErrSnapshot, p.Position, p.Unit, len(s.units))
		}
		s.byPos[p.Position] = s.units[p.Unit]
	}
	for _, k := range ss.Keyed {
		s.keyed[k.Key] = k.Count
	}
	s.inflight, s.dispatched, s.stopped = ss.Inflight, ss.Dispatched, ss.Stopped
	s.idx.paused, s.idx.open, s.idx.openActive = ss.Paused, ss.Open, ss.OpenActive
	if err := restoreBits(&s.idx.stepping, len(s.vertices), ss.Stepping); err != nil {
		return err
	}
	return restoreBits(&s.idx.dispatching, len(s.vertices), ss.Dispatching)
}

// restoreUnit makes unit i of a snapshot: plain nodes reuse the units New
// made (in order), so their vertex keeps pointing at them.
func (s *State) restoreUnit(u *unitSnap, i int, plain []*NodeState) (*NodeState, error) {
	if u.Vertex < 0 || u.Vertex >= len(s.vertices) {
		return nil, fmt.Errorf("%w: unit %d names vertex %d of %d", ErrSnapshot, i, u.Vertex, len(s.vertices))
	}
	if u.Status < StatusIdle || int(u.Status) >= len(statusNames) {
		return nil, fmt.Errorf("%w: unit %d has status %d", ErrSnapshot, i, u.Status)
	}
	v := s.vertices[u.Vertex]
	var n *NodeState
	switch {
	case i < len(plain):
		if n = plain[i]; n.v != v || u.Instance || u.Loop != "" {
			return nil, fmt.Errorf("%w: unit %d is not node %q", ErrSnapshot, i, n.Vertex)
		}
	case u.Loop != "":
		if v.Loop == nil || u.Member < 1 || u.Member > len(v.Def.Loop.Members) || u.Loop != v.Def.ID {
			return nil, fmt.Errorf("%w: unit %d is no member of a loop %q", ErrSnapshot, i, v.Def.ID)
		}
		n = &NodeState{Def: &v.Def.Loop.Members[u.Member-1], Vertex: v.Def.ID, Loop: u.Loop, Round: u.Round, v: v}
	case u.Instance:
		if v.Def.ForEach == nil {
			return nil, fmt.Errorf("%w: unit %d is an instance of %q, which has no for_each", ErrSnapshot, i, v.Def.ID)
		}
		n = &NodeState{Def: v.Def, Vertex: v.Def.ID, Instance: true, Key: u.Key, v: v, idx: u.Idx}
	default:
		return nil, fmt.Errorf("%w: unit %d is neither a node, an instance nor a member", ErrSnapshot, i)
	}
	n.Status, n.Attempts, n.Position, n.RetrySafe = u.Status, u.Attempts, u.Position, u.RetrySafe
	n.AttemptStarted, n.Approved, n.VerdictFailure = u.AttemptStarted, u.Approved, u.VerdictFailure
	if u.ResultSet {
		n.Result = json.RawMessage(u.Result)
		if n.Result == nil {
			n.Result = json.RawMessage{}
		}
	}
	var j jsonParts
	n.ResultArtifact = fromJSON[ArtifactRef](&j, u.Artifact)
	n.Failure = fromJSON[FailedData](&j, u.Failure)
	n.Pause = fromJSON[PauseRequest](&j, u.Pause)
	n.Decision = fromJSON[ActionDecidedData](&j, u.Decision)
	if j.err != nil {
		return nil, fmt.Errorf("unit %d: %w", i, j.err)
	}
	return n, nil
}

func (s *State) restoreVertex(v *VertexState, vs *vertexSnap) error {
	units := func(nums []int, want func(*NodeState) bool) ([]*NodeState, error) {
		var out []*NodeState
		for _, k := range nums {
			if k < 0 || k >= len(s.units) || s.units[k].v != v || !want(s.units[k]) {
				return nil, fmt.Errorf("%w: unit %d does not belong here", ErrSnapshot, k)
			}
			out = append(out, s.units[k])
		}
		return out, nil
	}
	switch {
	case v.Unit != nil:
		if vs.Unit < 1 || vs.Unit > len(s.units) || s.units[vs.Unit-1] != v.Unit || len(vs.Instances) > 0 || vs.Loop != nil {
			return fmt.Errorf("%w: a node's unit is not its own", ErrSnapshot)
		}
	case v.Loop != nil:
		if vs.Loop == nil || len(vs.Instances) > 0 {
			return fmt.Errorf("%w: a loop has no loop state", ErrSnapshot)
		}
	case vs.Loop != nil || vs.Unit != 0:
		return fmt.Errorf("%w: a for_each node has a unit or loop state", ErrSnapshot)
	}
	var err error
	if v.Instances, err = units(vs.Instances, func(n *NodeState) bool { return n.Instance }); err != nil {
		return err
	}
	for i, n := range v.Instances {
		if n.idx != i {
			return fmt.Errorf("%w: instance %d has index %d", ErrSnapshot, i, n.idx)
		}
	}
	var j jsonParts
	v.Expansion = fromJSON[ExpandedData](&j, vs.Expansion)
	v.failure = fromJSON[FailedData](&j, vs.Failure)
	if l := vs.Loop; l != nil {
		v.Loop.Started, v.Loop.Finished = l.Started, fromJSON[LoopFinishedData](&j, l.Finished)
		for _, r := range l.Rounds {
			rs := &RoundState{Round: r.Round, Condition: fromJSON[ConditionData](&j, r.Condition), Review: fromJSON[ReviewedData](&j, r.Review)}
			if rs.Members, err = units(r.Members, func(n *NodeState) bool { return n.Loop != "" && n.Round == r.Round }); err != nil {
				return err
			}
			v.Loop.Rounds = append(v.Loop.Rounds, rs)
		}
	}
	if j.err != nil {
		return j.err
	}
	v.passed, v.failed = vs.Passed, vs.Failed
	v.ix.pending, v.ix.blocked, v.ix.byDep, v.ix.green, v.ix.hard = vs.Pending, vs.Blocked, vs.ByDep, vs.Green, vs.Hard
	v.ix.active, v.ix.open, v.ix.openActive = vs.Active, vs.Open, vs.OpenActive
	if v.Expansion != nil && v.Expansion.Code == "" {
		return restoreBits(&v.ix.idle, len(v.Expansion.Keys), vs.Idle)
	}
	if len(vs.Idle.Words)+len(vs.Idle.Summary) > 0 {
		return fmt.Errorf("%w: idle instances without an expansion", ErrSnapshot)
	}
	return nil
}

func saveBits(b bitSet) bitSnap { return bitSnap{Words: b.words, Summary: b.summary} }

// restoreBits sets b to a set of n members holding saved's words.
func restoreBits(b *bitSet, n int, saved bitSnap) error {
	*b = newBitSet(n)
	if len(saved.Words) != len(b.words) || len(saved.Summary) != len(b.summary) {
		return fmt.Errorf("%w: a set of %d members has %d words and %d summary words", ErrSnapshot, n, len(saved.Words), len(saved.Summary))
	}
	copy(b.words, saved.Words)
	copy(b.summary, saved.Summary)
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
		j.err = fmt.Errorf("%w: %v", ErrSnapshot, err)
		return nil
	}
	return v
}
