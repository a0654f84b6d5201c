package main

import (
	"context"
	"encoding/json"
	"fmt"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/obversa/obversa/host/executor"
	"github.com/obversa/obversa/host/graph"
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
// recording STOPPED under the run's lock; an ended run is left alone.
func stopIdle(cmd *cobra.Command, dir string) error {
	ctx := cmd.Context()
	run, err := store.OpenRunDir(ctx, dir, store.Policy{})
	if err != nil {
		return failedErr(err)
	}
	defer run.Close()
	owner, err := run.Lock(ctx)
	if err != nil {
		return failedErr(err)
	}
	defer owner.Release()
	x, err := executor.New(ctx, executor.Options{Run: run})
	if err != nil {
		return failedErr(err)
	}
	if f := x.Finished(); f != nil {
		return usageErr(fmt.Errorf("the run already ended (%s %s); nothing to stop", f.Kind, f.Code))
	}
	out, _ := json.Marshal(map[string]string{"message": "stopped by obversa stop while no watchdog held the run"})
	res := graph.RunResult{RunID: run.ID(), Kind: "fail", Code: watchdog.CodeStopped, Output: out}
	if _, err := run.Append(ctx, run.Rev(), store.NewEvent{Type: graph.EventRunFinished, Data: res}); err != nil {
		return failedErr(err)
	}
	fmt.Fprintf(cmd.OutOrStdout(), "recorded STOPPED for %s\n", dir)
	return nil
}
