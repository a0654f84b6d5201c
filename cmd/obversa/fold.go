package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/obversa/obversa/host/runstate"
	"github.com/obversa/obversa/host/watchdog"
)

// foldRun folds the record of the run ref names read-only (the shared
// fold, host/runstate) and says whether a live owner holds the run
// (watchdog.Ref.Owner); an owner that cannot be read holds none.
func foldRun(ctx context.Context, ref runRef) (*runstate.State, bool, error) {
	st, o, ownerErr, err := foldOwner(ctx, ref)
	return st, ownerErr == nil && o.Live, err
}

// foldOwner folds the record of the run ref names read-only, as foldRun,
// and reads who owns the run through the same handle
// (watchdog.Ref.Owner); ownerErr is the error reading the owner, if any.
func foldOwner(ctx context.Context, ref runRef) (st *runstate.State, o watchdog.Owner, ownerErr, err error) {
	run, err := ref.OpenReadOnly(ctx)
	if err != nil {
		return nil, o, nil, failedErr(err)
	}
	defer run.Close()
	st, err = runstate.LoadWithSnapshot(ctx, run, run.Dir())
	if err != nil {
		return nil, o, nil, failedErr(runErr(ref, err))
	}
	o, ownerErr = ref.Owner(ctx, run)
	return st, o, ownerErr, nil
}

// runErr is err of the run ref names, prefixed with the run, with the fix
// notStartedFix gives.
func runErr(ref runRef, err error) error {
	return notStartedFix(ref, fmt.Errorf("%s: %w", ref, err))
}

// notStartedFix is err with the fix of an empty record appended
// (runstate.ErrEmptyRecord: the run was cut off while it was created,
// before its first event): nothing of it was recorded, so remove it and
// run the run file again. Any other err is returned as it is.
func notStartedFix(ref runRef, err error) error {
	if !errors.Is(err, runstate.ErrEmptyRecord) {
		return err
	}
	fix := "start it again with obversa run"
	if d, ok := ref.(dirRun); ok {
		fix = fmt.Sprintf("remove its directory (rm -r %s) and start it again with obversa run", d.Shell())
	}
	return fmt.Errorf("%w; nothing of this run was recorded (it was cut off while it was created): %s", err, fix)
}
