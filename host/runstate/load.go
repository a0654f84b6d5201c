package runstate

import (
	"context"
	"errors"

	"github.com/obversa/obversa/host/graph"
	"github.com/obversa/obversa/host/plan"
	"github.com/obversa/obversa/store"
)

// Reader is what folding needs of a record: its events from a revision
// on, in order (store.Stream, store.Record).
type Reader interface {
	Read(ctx context.Context, fromRev int64, fn func(store.Event) error) error
}

// Load folds a whole record. Errors: ErrNotStarted for an empty record or
// one that does not begin with graph:run-started, Apply's errors naming
// the event, and the record's read errors.
func Load(ctx context.Context, r Reader) (*State, error) {
	s := New()
	if err := s.CatchUp(ctx, r); err != nil {
		return nil, err
	}
	if s.start == nil {
		return nil, ErrEmptyRecord
	}
	return s, nil
}

// Refold folds the record r, the run in directory dir, again for a
// process that holds a fold of it, from (the worker, as it saves the fold
// snapshot): as LoadWithSnapshot, from dir's snapshot when it is usable;
// else the whole record, but for the record's first event, graph:run-started, is not decoded and checked
// again when its digest is the one from applied it with — the hash chain
// ties that digest to the event, so from's start is that event, checked
// when from folded it. On a 33 400-node definition that is a quarter of a
// full fold. With a from that did not apply its start from the record
// (nil, or one that folded it with Fold), or a record whose first event
// is another, it is LoadWithSnapshot. Errors: Load's.
func Refold(ctx context.Context, r Reader, dir string, from *State) (*State, error) {
	if dir != "" {
		if s, err := fromSnapshot(ctx, r, dir); err == nil {
			return s, nil
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
	if from == nil || from.startDigest == "" {
		return Load(ctx, r)
	}
	s := New()
	err := r.Read(ctx, 1, func(e store.Event) error {
		if s.start != nil {
			return s.Apply(e)
		}
		if e.Rev != 1 || e.Type != graph.EventRunStarted || e.Digest != from.startDigest {
			return errOtherStart
		}
		// The start is never changed once folded; the two folds share it
		// and its definition, and each has its own graph state.
		s.begin(from.start, graph.Rebuild(from.start.Definition))
		s.startDigest, s.rev, s.digest, s.lastAt = e.Digest, e.Rev, e.Digest, e.TS
		return nil
	})
	if errors.Is(err, errOtherStart) {
		return Load(ctx, r)
	}
	if err != nil {
		return nil, err
	}
	if s.start == nil {
		return nil, ErrEmptyRecord
	}
	return s, nil
}

// errOtherStart stops Refold at a first event that is not the start it
// was given.
var errOtherStart = errors.New("the record's first event is not the start of the fold given")

// CatchUp folds the events recorded after the last one applied.
func (s *State) CatchUp(ctx context.Context, r Reader) error {
	return r.Read(ctx, s.rev+1, s.Apply)
}

// ReadStart reads and checks only the record's first event, for a process
// that needs the plan before it opens the record for good (its policy).
func ReadStart(ctx context.Context, r Reader) (*plan.RunStarted, error) {
	s, err := startOnly(ctx, r)
	if err != nil {
		return nil, err
	}
	return s.start, nil
}

// LoadStart folds only the record's first event, for a process that
// needs the plan before it opens the record for good (its policy) and
// then folds the rest through that handle with CatchUp: the start, often
// most of a fold's work (a large definition decoded, its digests checked,
// its graph built), is folded once, not once for the plan and again for
// the fold. Errors as ReadStart's.
func LoadStart(ctx context.Context, r Reader) (*State, error) {
	return startOnly(ctx, r)
}

// startOnly folds the record's first event alone.
func startOnly(ctx context.Context, r Reader) (*State, error) {
	e, err := firstEvent(ctx, r)
	if err != nil {
		return nil, err
	}
	s := New()
	if err := s.Apply(e); err != nil {
		return nil, err
	}
	return s, nil
}

// firstEvent reads the record's first event. ErrNotStarted for an empty
// record.
func firstEvent(ctx context.Context, r Reader) (store.Event, error) {
	var first store.Event
	err := r.Read(ctx, 1, func(e store.Event) error {
		first = e
		return errStop
	})
	if err != nil && !errors.Is(err, errStop) {
		return first, err
	}
	if first.Rev == 0 {
		return first, ErrEmptyRecord
	}
	return first, nil
}

var errStop = errors.New("stop")
