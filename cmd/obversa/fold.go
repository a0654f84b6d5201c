package main

import (
	"context"
	"fmt"

	"github.com/obversa/obversa/host/runstate"
	"github.com/obversa/obversa/store"
)

// foldRun folds the record of the run at dir read-only (the shared fold,
// host/runstate) and says whether a live watchdog holds the run.
func foldRun(ctx context.Context, dir string) (*runstate.State, bool, error) {
	run, err := store.OpenRunDirReadOnly(ctx, dir)
	if err != nil {
		return nil, false, failedErr(err)
	}
	defer run.Close()
	st, err := runstate.Load(ctx, run)
	if err != nil {
		return nil, false, failedErr(fmt.Errorf("%s: %w", dir, err))
	}
	h, held, err := run.Holder(ctx)
	return st, err == nil && held && store.HolderAlive(h), nil
}
