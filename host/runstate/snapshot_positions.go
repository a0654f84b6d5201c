package runstate

import (
	"fmt"
	"maps"
	"slices"

	"github.com/obversa/obversa/host/graph"
	"github.com/obversa/obversa/host/snapcodec"
	"github.com/obversa/obversa/plugin"
)

// The positions in a fold snapshot, field by field. Their engine calls'
// requested and effective targets repeat a few lanes' targets across
// every call; the codec keeps each distinct one once (a byte-string
// table) and the calls share its bytes, which nothing changes in place.
// TestSnapshotPositionMirrorsEveryField fails when a field of Position,
// EngineCall, plugin.Usage or graph.ArtifactRef is not written here.

// encodePosition writes p.
func encodePosition(w *snapcodec.Writer, p *Position) {
	w.Str(p.Node)
	w.Time(p.DispatchedAt)
	w.Time(p.StartedAt)
	w.Time(p.SettledAt)
	w.Int(int64(p.StartedUnder))
	w.Uint(uint64(len(p.Calls)))
	for i := range p.Calls {
		c := &p.Calls[i]
		w.Int(int64(c.Sequence))
		w.Str(c.Outcome)
		w.Str(c.FailureKind)
		w.Bytes(c.Requested)
		w.Bytes(c.Effective)
		writeUsage(w, c.Usage)
		w.Bool(c.PartsArtifact != nil)
		if a := c.PartsArtifact; a != nil {
			w.Str(a.Digest)
			w.Int(a.Size)
			w.Str(a.MediaType)
			w.Str(a.Purpose)
		}
	}
}

// encodePositions writes s's sequences and positions, each map as a
// list sorted by position.
func (s *State) encodePositions(w *snapcodec.Writer) {
	w.Uint(uint64(len(s.seq)))
	for _, k := range slices.Sorted(maps.Keys(s.seq)) {
		w.Str(k)
		w.Int(int64(s.seq[k]))
	}
	w.Uint(uint64(len(s.pos)))
	for _, k := range slices.Sorted(maps.Keys(s.pos)) {
		w.Str(k)
		encodePosition(w, s.pos[k])
	}
}

// deferPositions reads past the sequences and positions in r, checking
// that they decode, and keeps where they are for loadPositions: a reader
// that asks for no position — status of a finished run — never builds
// the two maps of one entry per position. Errors wrap
// ErrSnapshotInvalid.
// With transient payload bytes (a mapped file) the positions' bytes are
// copied to be read later.
func (s *State) deferPositions(r *snapcodec.Reader, transient bool) error {
	at := *r
	if err := decodePositions(r, nil); err != nil {
		return err
	}
	if transient {
		s.later.Store(r.Detach(at))
	} else {
		s.later.Store(&at)
	}
	return nil
}

// loadPositions builds the sequences and positions a restore deferred;
// every use of s.seq and s.pos comes after it. They decoded once
// already (deferPositions), so they decode again. Safe for concurrent
// readers of one State: the first builds the maps under laterMu and
// clears later after, so a reader that finds later nil sees them whole.
func (s *State) loadPositions() {
	if s.later.Load() == nil {
		return
	}
	s.laterMu.Lock()
	defer s.laterMu.Unlock()
	if r := s.later.Load(); r != nil {
		if err := decodePositions(r, s); err != nil {
			panic(fmt.Sprintf("runstate: positions checked at restore do not decode: %v", err))
		}
		s.later.Store(nil)
	}
}

// decodePositions reads the sequences and positions into s.seq and s.pos
// — one allocation for the positions, one for their calls (each
// position's capped at its end) — or, with a nil s, only checks that
// they decode. Errors wrap ErrSnapshotInvalid.
func decodePositions(r *snapcodec.Reader, s *State) error {
	n := r.Len()
	if s != nil {
		s.seq = make(map[string]int, n)
	}
	for range n {
		k, seq := r.Str(), int(r.Int())
		if s != nil {
			s.seq[k] = seq
		}
	}
	n = r.Len()
	var ps []Position
	if s != nil {
		s.pos = make(map[string]*Position, n)
		ps = make([]Position, n)
	}
	var calls []EngineCall
	var p Position
	for i := range n {
		k := r.Str()
		if s != nil {
			p = Position{}
		}
		p.Node, p.DispatchedAt, p.StartedAt, p.SettledAt = r.Str(), r.Time(), r.Time(), r.Time()
		p.StartedUnder = int(r.Int())
		nc := r.Len()
		if len(calls) < nc {
			size := nc
			if s != nil {
				size = max(nc, min(n-i, 4096))
			}
			calls = make([]EngineCall, size)
		}
		p.Calls = calls[:nc:nc]
		if s != nil {
			calls = calls[nc:]
		}
		for j := range p.Calls {
			c := &p.Calls[j]
			c.Sequence, c.Outcome, c.FailureKind = int(r.Int()), r.Str(), r.Str()
			c.Requested, c.Effective, c.Usage = r.Bytes(), r.Bytes(), readUsage(r)
			c.PartsArtifact = nil
			if r.Bool() {
				c.PartsArtifact = &graph.ArtifactRef{Digest: r.Str(), Size: r.Int(), MediaType: r.Str(), Purpose: r.Str()}
			}
		}
		if nc == 0 {
			p.Calls = nil
		}
		if err := r.Err(); err != nil {
			return fmt.Errorf("%w: position %d: %w", ErrSnapshotInvalid, i, err)
		}
		if s != nil {
			ps[i] = p
			s.pos[k] = &ps[i]
		}
	}
	if err := r.Err(); err != nil {
		return fmt.Errorf("%w: %w", ErrSnapshotInvalid, err)
	}
	return nil
}

func writeUsage(w *snapcodec.Writer, u plugin.Usage) {
	w.Bool(u.Known)
	w.Int(u.Input)
	w.Int(u.Output)
	w.Int(u.CacheRead)
	w.Int(u.CacheCreation)
}

func readUsage(r *snapcodec.Reader) plugin.Usage {
	return plugin.Usage{Known: r.Bool(), Input: r.Int(), Output: r.Int(), CacheRead: r.Int(), CacheCreation: r.Int()}
}
