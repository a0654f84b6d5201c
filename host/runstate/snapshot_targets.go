package runstate

import (
	"encoding/json"
	"fmt"
	"slices"
)

// snapPosition returns the snapshot entry of position k: p with its
// calls' requested and effective targets kept once each in fs.Targets
// (ids maps a target to its index there plus one).
func (fs *foldSnap) snapPosition(k string, p *Position, ids map[string]int32) posEntry {
	e := posEntry{Position: k, P: *p}
	if len(e.P.Calls) == 0 {
		return e
	}
	intern := func(b json.RawMessage) int32 {
		if b == nil {
			return 0
		}
		id, ok := ids[string(b)]
		if !ok {
			fs.Targets = append(fs.Targets, b)
			id = int32(len(fs.Targets))
			ids[string(b)] = id
		}
		return id
	}
	e.P.Calls = slices.Clone(e.P.Calls) // the State's own stay as they are
	e.Targets = make([]int32, 0, 2*len(e.P.Calls))
	for i := range e.P.Calls {
		c := &e.P.Calls[i]
		e.Targets = append(e.Targets, intern(c.Requested), intern(c.Effective))
		c.Requested, c.Effective = nil, nil
	}
	return e
}

// restoreTargets puts e's calls' requested and effective targets back
// from fs.Targets. Calls with the same target share its bytes, which
// nothing changes in place. Errors wrap ErrSnapshotInvalid.
func (fs *foldSnap) restoreTargets(e *posEntry) error {
	if len(e.Targets) != 2*len(e.P.Calls) {
		return fmt.Errorf("%w: position %s: %d targets for %d calls", ErrSnapshotInvalid, e.Position, len(e.Targets), len(e.P.Calls))
	}
	for i, id := range e.Targets {
		if id < 0 || int(id) > len(fs.Targets) {
			return fmt.Errorf("%w: position %s: target %d of %d", ErrSnapshotInvalid, e.Position, id, len(fs.Targets))
		}
		var t json.RawMessage
		if id > 0 {
			t = fs.Targets[id-1]
		}
		if c := &e.P.Calls[i/2]; i%2 == 0 {
			c.Requested = t
		} else {
			c.Effective = t
		}
	}
	return nil
}
