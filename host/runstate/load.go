package runstate

import (
	"context"
	"errors"
	"fmt"

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
		return nil, fmt.Errorf("%w (the record is empty)", ErrNotStarted)
	}
	return s, nil
}

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
		return first, fmt.Errorf("%w (the record is empty)", ErrNotStarted)
	}
	return first, nil
}

var errStop = errors.New("stop")
