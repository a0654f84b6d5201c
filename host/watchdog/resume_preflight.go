package watchdog

import (
	"context"
	"fmt"

	"github.com/obversa/obversa/host/executor"
	"github.com/obversa/obversa/host/runstate"
	"github.com/obversa/obversa/store"
)

// preflightEvents checks the run's preflight state against o (docs/architecture.md#the-executor):
// an open probe refuses the start (PROTOCOL); a preflight pause is resumed
// only by its own event id, recorded as preflight:resumed; an id that is
// not the open pause is RESUME_EVENT_MISMATCH naming both.
func preflightEvents(r runstate.PreflightReport, o ResumeOptions, name string) ([]store.NewEvent, error) {
	if r.OpenProbe != nil {
		return nil, executor.OpenProbeError(*r.OpenProbe, name)
	}
	switch {
	case r.PauseEventID == "" && o.Preflight == "":
		return nil, nil
	case r.PauseEventID == "":
		latest := r.LastPauseEventID
		if latest == "" {
			latest = "none"
		}
		return nil, fmt.Errorf("%w: --preflight %s, but the run waits on no preflight pause (preflight phase %s; latest preflight pause %s)",
			ErrResumeEventMismatch, o.Preflight, r.Phase, latest)
	case o.Preflight == "":
		return nil, fmt.Errorf("%w: no --preflight given, but the run waits on preflight pause %s; carry it on with `obversa resume --preflight %s %s`",
			ErrResumeEventMismatch, r.PauseEventID, r.PauseEventID, name)
	case o.Preflight != r.PauseEventID:
		return nil, fmt.Errorf("%w: --preflight %s is not the open preflight pause %s; resume with --preflight %s",
			ErrResumeEventMismatch, o.Preflight, r.PauseEventID, r.PauseEventID)
	case o.Position != "" || o.Reconciled != "":
		return nil, fmt.Errorf("%w: the run waits on preflight pause %s, before any position was dispatched; drop --position and --reconciled",
			ErrResumePosition, r.PauseEventID)
	}
	return []store.NewEvent{{Type: runstate.EventPreflightResumed, Data: runstate.PreflightResumedData{PreflightEventID: r.PauseEventID}}}, nil
}

// InterruptPreflight closes the preflight probe a crash left open in the
// run ref names as interrupted and records a preflight pause, in one
// conditional append (docs/architecture.md#the-executor), so that `obversa resume --preflight ID`
// can carry the run on. It runs only while no watchdog or worker holds the
// run: it takes the run's lock (store.ErrProcessLocked otherwise) and stops
// any process still carrying the run's marker (ErrSurvivors when one
// survives). It returns the pause's event id; already is true when an
// earlier interrupt recorded that pause and nothing was appended. Errors:
// executor.ErrNothingToInterrupt when no probe is open, an error wrapping
// store.ErrRevisionConflict when something else was appended first.
func InterruptPreflight(ctx context.Context, ref Ref) (id string, already bool, err error) {
	run, st, err := openRun(ctx, ref)
	if err != nil {
		return "", false, err
	}
	defer run.Close()
	owner, err := run.Lock(ctx)
	if err != nil {
		return "", false, lockRefusal(err, ref)
	}
	defer owner.Release()
	if err := st.CatchUp(ctx, run); err != nil {
		return "", false, err
	}
	if r := st.Preflight().Report(); r.OpenProbe != nil {
		marker, err := ref.Marker(ctx)
		if err != nil {
			return "", false, err
		}
		if _, err := stopMarked(ctx, marker, st.Plan().TeardownGrace()); err != nil {
			return "", false, err
		}
	}
	x, err := executor.New(executor.Options{Run: run, State: st})
	if err != nil {
		return "", false, err
	}
	return x.InterruptPreflight(ctx)
}
