package main

import (
	"context"
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
		return nil, o, nil, failedErr(fmt.Errorf("%s: %w", ref, err))
	}
	o, ownerErr = ref.Owner(ctx, run)
	return st, o, ownerErr, nil
}
