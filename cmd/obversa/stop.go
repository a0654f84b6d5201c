package main

import (
	"context"
	"errors"
	"fmt"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/obversa/obversa/host/watchdog"
	"github.com/obversa/obversa/store"
)

func newStopCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "stop RUN",
		Short: "Stop a run: ask its watchdog to stop cleanly, or end a paused or interrupted run (STOPPED)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := g.runDir(args[0])
			if err != nil {
				return err
			}
			h, ok, err := holder(cmd.Context(), dir)
			if err != nil {
				return failedErr(err)
			}
			if ok && store.HolderAlive(h) {
				if err := syscall.Kill(h.PID, syscall.SIGTERM); err != nil {
					return failedErr(fmt.Errorf("signalling watchdog pid %d: %w", h.PID, err))
				}
				fmt.Fprintf(cmd.OutOrStdout(), "asked watchdog pid %d on %s to stop the run\n", h.PID, h.Host)
				return nil
			}
			return stopIdle(cmd, dir)
		},
	}
}

// holder returns the recorded holder of the run at dir.
func holder(ctx context.Context, dir string) (store.Holder, bool, error) {
	run, err := store.OpenRunDirReadOnly(ctx, dir)
	if err != nil {
		return store.Holder{}, false, err
	}
	defer run.Close()
	return run.Holder(ctx)
}

// stopIdle ends a run no watchdog holds (paused, or interrupted) by
// recording STOPPED; an ended run is left alone.
func stopIdle(cmd *cobra.Command, dir string) error {
	res, err := watchdog.StopIdle(cmd.Context(), dir)
	switch {
	case errors.Is(err, watchdog.ErrAlreadyEnded):
		return usageErr(fmt.Errorf("the run already ended (%s %s); nothing to stop", res.Kind, res.Code))
	case errors.Is(err, store.ErrProcessLocked):
		return failedErr(fmt.Errorf("%w; the run's watchdog went away while this command looked: try `obversa stop` again", err))
	case err != nil:
		return failedErr(err)
	}
	fmt.Fprintf(cmd.OutOrStdout(), "recorded STOPPED for %s\n", dir)
	return nil
}
