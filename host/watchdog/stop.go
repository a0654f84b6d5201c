package watchdog

import (
	"context"
	"errors"
	"time"

	"github.com/obversa/obversa/host/runstate"
	"github.com/obversa/obversa/store"
)

// ErrAlreadyEnded is returned by StopIdle for a run that has a terminal
// result; the result is returned with it.
var ErrAlreadyEnded = errors.New("the run already ended")

// StopIdle ends a run no watchdog holds (paused, or interrupted) by
// recording STOPPED under the run's lock, at the revision it read there.
// A run that already ended is left alone: its result is returned with
// ErrAlreadyEnded. store.ErrProcessLocked while a watchdog or worker holds
// the run (stop a live run through its watchdog).
func StopIdle(ctx context.Context, ref Ref) (*runstate.Result, error) {
	return stopUnheld(ctx, ref, "stopped by obversa stop while no watchdog held the run")
}

// StoppedByRequest is the message of the STOPPED result recorded when
// `obversa stop` asks the watchdog that holds the run to stop it (its
// context cancelled): while its worker runs, and before a resume or
// approve recorded its takeover (StopBeforeTakeover). The stop is the
// operator's either way (docs/decisions.md, "`stop` signals a watchdog").
const StoppedByRequest = "stopped by request"

// StopBeforeTakeover ends a run whose resuming watchdog (`obversa resume`
// or `approve`) was asked to stop by `obversa stop` before it recorded its
// takeover and has let the run go: as StopIdle, but the result's message
// is StoppedByRequest, as when a watchdog is stopped later, since a
// watchdog did hold the run when the stop came. Errors as StopIdle.
func StopBeforeTakeover(ctx context.Context, ref Ref) (*runstate.Result, error) {
	return stopUnheld(ctx, ref, StoppedByRequest)
}

// stopUnheld is StopIdle recording message as the STOPPED result's.
func stopUnheld(ctx context.Context, ref Ref, message string) (*runstate.Result, error) {
	run, st, err := openRun(ctx, ref)
	if err != nil {
		return nil, err
	}
	defer run.Close()
	lock, err := run.Lock(ctx)
	if err != nil {
		return nil, lockRefusal(err, ref)
	}
	defer lock.Release()
	if err := st.CatchUp(ctx, run); err != nil {
		return nil, err
	}
	if f := st.Finished(); f != nil {
		return f, ErrAlreadyEnded
	}
	// Nothing of the run may outlive it: whatever carries its marker is
	// stopped, and the record says whether that was verified.
	marker, err := ref.Marker(ctx)
	if err != nil {
		return nil, err
	}
	marked, left := stopRun(ctx, marker, st.Plan().TeardownGrace())
	cleanup := store.NewEvent{Type: runstate.EventCleanup, Data: runstate.NewCleanup(marked, left)}
	res := runstate.Message(st.Plan().RunID, runstate.KindFail, CodeStopped, message)
	// Whatever was in flight was cut off when the run was interrupted,
	// which is after its last record and long before now, maybe.
	last, err := lastRecorded(ctx, run, st.Rev())
	if err != nil {
		return nil, err
	}
	if err := endInterrupted(ctx, run, st, res, last, cleanup); err != nil {
		return nil, conflictHint(err, ref)
	}
	return res, nil
}

// lastRecorded returns the commit time of the record's event at rev.
func lastRecorded(ctx context.Context, run store.Record, rev int64) (time.Time, error) {
	var at time.Time
	err := run.Read(ctx, rev, func(e store.Event) error {
		if e.Rev == rev {
			at = e.TS
		}
		return nil
	})
	return at, err
}
