package main

import (
	"context"
	"fmt"

	"github.com/obversa/obversa/host/runstate"
)

// foldRun folds the record of the run ref names read-only (the shared
// fold, host/runstate) and says whether a live owner holds the run
// (watchdog.Ref.Owner).
func foldRun(ctx context.Context, ref runRef) (*runstate.State, bool, error) {
	run, err := ref.OpenReadOnly(ctx)
	if err != nil {
		return nil, false, failedErr(err)
	}
	defer run.Close()
	st, err := runstate.Load(ctx, run)
	if err != nil {
		return nil, false, failedErr(fmt.Errorf("%s: %w", ref, err))
	}
	o, err := ref.Owner(ctx, run)
	return st, err == nil && o.Live, nil
}
