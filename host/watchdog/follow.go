package watchdog

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/obversa/obversa/host/runstate"
	"github.com/obversa/obversa/store"
)

// ownerPoll is how often Follow asks whether the watchdog of a run whose
// result is recorded still lives, while it waits for that watchdog's
// cleanup.
const ownerPoll = 250 * time.Millisecond

// errClosed stops the record's follow once the run's record is closed.
var errClosed = errors.New("the run's record is closed")

// Over reports whether a run has ended for a follower: its record is
// closed, or its result is recorded and no live owner holds the run any
// more (its watchdog died before it recorded its cleanup). A paused or
// interrupted run is not over: it can be resumed (docs/decisions.md,
// "Following a run to its end").
func Over(e runstate.Ending, owner Owner) bool {
	return e == runstate.Closed || e == runstate.Ended && !owner.Live
}

// Follow passes fold every event of run recorded from revision from on,
// in order and once each, waiting for new ones, until the run is over
// (Over): then it has passed the run's result and everything recorded
// after it, and returns nil. fold folds the event into the caller's fold
// and returns how far the run has ended by it (runstate.State.Ending);
// from is the first revision the caller's fold lacks. Follow returns
// ctx's error when ctx ends first, fold's first error, or the record's
// or the owner's read error.
func Follow(ctx context.Context, ref Ref, run store.Record, from int64, ending runstate.Ending,
	fold func(store.Event) (runstate.Ending, error)) error {
	next := from
	var ended atomic.Bool
	ended.Store(ending != runstate.NotEnded)
	step := func(e store.Event) error {
		if e.Rev < next {
			return nil
		}
		next = e.Rev + 1
		var err error
		if ending, err = fold(e); err != nil {
			return err
		}
		if ending == runstate.Closed {
			return errClosed
		}
		ended.Store(ending == runstate.Ended)
		return nil
	}
	if ending == runstate.Closed {
		return run.Read(ctx, next, step)
	}
	fctx, stop := context.WithCancel(ctx)
	defer stop()
	watch := make(chan error, 1)
	go func() { watch <- waitOwnerGone(fctx, ref, run, &ended, stop) }()
	err := run.Follow(fctx, next, step)
	stopped := fctx.Err() != nil // by waitOwnerGone, or ctx
	stop()
	if werr := <-watch; werr != nil && ctx.Err() == nil {
		return werr
	}
	switch {
	case errors.Is(err, errClosed):
		return nil
	case ctx.Err() != nil:
		return ctx.Err()
	case err != nil && !stopped:
		return err
	}
	// The run is over without its cleanup recorded: what its record
	// holds now is all it will hold until someone takes it over.
	if err := run.Read(ctx, next, step); err != nil && !errors.Is(err, errClosed) {
		return err
	}
	return nil
}

// waitOwnerGone calls stop once the run has its result (ended) and no
// live owner holds it; it returns when ctx ends, or the owner's read
// error.
func waitOwnerGone(ctx context.Context, ref Ref, run store.Record, ended *atomic.Bool, stop func()) error {
	t := time.NewTicker(ownerPoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if !ended.Load() {
			continue
		}
		o, err := ref.Owner(ctx, run)
		if errors.Is(err, store.ErrUnavailable) {
			// The database is down: the record's follow waits it out
			// (and says so); so does this.
			continue
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			stop()
			return err
		}
		if Over(runstate.Ended, o) {
			stop()
			return nil
		}
	}
}

// WaitOver folds run from its start and returns nil once the run is over
// (Follow): for a follower of something beside the record (its live
// output) that should end with the run. Errors as Follow's.
func WaitOver(ctx context.Context, ref Ref, run store.Record) error {
	st := runstate.New()
	return Follow(ctx, ref, run, 1, runstate.NotEnded, func(e store.Event) (runstate.Ending, error) {
		if err := st.Apply(e); err != nil {
			return 0, err
		}
		return st.Ending(), nil
	})
}
