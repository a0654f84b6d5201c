package runstate

import (
	"fmt"

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

// restorePositions reads the positions into s.pos: one allocation for
// the positions, one for their calls (each position's capped at its
// end). Errors wrap ErrSnapshotInvalid.
func (s *State) restorePositions(r *snapcodec.Reader) error {
	n := r.Len()
	s.pos = make(map[string]*Position, n)
	ps := make([]Position, n)
	var calls []EngineCall
	for i := range ps {
		k := r.Str()
		p := &ps[i]
		p.Node, p.DispatchedAt, p.StartedAt, p.SettledAt = r.Str(), r.Time(), r.Time(), r.Time()
		if nc := r.Len(); nc > 0 {
			if len(calls) < nc {
				calls = make([]EngineCall, max(nc, min(n-i, 4096)))
			}
			p.Calls, calls = calls[:nc:nc], calls[nc:]
			for j := range p.Calls {
				c := &p.Calls[j]
				c.Sequence, c.Outcome, c.FailureKind = int(r.Int()), r.Str(), r.Str()
				c.Requested, c.Effective, c.Usage = r.Bytes(), r.Bytes(), readUsage(r)
				if r.Bool() {
					c.PartsArtifact = &graph.ArtifactRef{Digest: r.Str(), Size: r.Int(), MediaType: r.Str(), Purpose: r.Str()}
				}
			}
		}
		if err := r.Err(); err != nil {
			return fmt.Errorf("%w: position %d: %w", ErrSnapshotInvalid, i, err)
		}
		s.pos[k] = p
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
