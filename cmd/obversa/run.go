package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/obversa/obversa/host/watchdog"
	"github.com/obversa/obversa/store"
)

func newRunCmd(g *globals) *cobra.Command {
	var runID string
	var progress string
	var asJSON, tofu bool
	cmd := &cobra.Command{
		Use:   "run [--run-id ID] [--json] FILE",
		Short: "Validate a run file, pin its plugins, and run its graph under a watchdog",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			mode, err := progressMode(progress, asJSON)
			if err != nil {
				return err
			}
			ctx, stop := stopContext()
			defer stop()
			po := watchdog.PrepareOptions{RunID: runID, TrustOnFirstUse: tofu}
			// Flags given on the command line win over the run file.
			if cmd.Flags().Changed("storage") {
				po.Storage = g.storage
			}
			if cmd.Flags().Changed("namespace") {
				po.Namespace = g.namespace
			}
			pr, err := watchdog.Prepare(ctx, args[0], po)
			if err != nil {
				return refusal(err)
			}
			printWarnings(os.Stderr, pr.Warnings)
			run, owner, err := watchdog.Create(ctx, pr)
			if err != nil {
				if errors.Is(err, store.ErrRunExists) {
					return existingRun(ctx, pr, err)
				}
				if errors.Is(err, store.ErrKnownSecret) || errors.Is(err, store.ErrStorageLimitExceeded) {
					return usageErr(fmt.Errorf("the run was not started: %w", err))
				}
				return failedErr(err)
			}
			defer run.Close()
			fmt.Fprintf(os.Stderr, "run %s: record in %s\n", pr.Plan.RunID, run.Dir())
			view := watchRun(run.Dir(), mode, os.Stderr)
			res, err := watchdog.Supervise(ctx, run, watchdog.SuperviseOptions{Owner: owner, Pause: pauseSignal()})
			view.Stop()
			if err != nil {
				return failedErr(err)
			}
			return report(ctx, cmd.OutOrStdout(), res, run.Dir(), asJSON)
		},
	}
	cmd.Flags().StringVar(&runID, "run-id", "", "run id (default: time-based)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result object {run_id, kind, code, output}")
	cmd.Flags().BoolVar(&tofu, "lock", false, "pin unpinned plugins to their current digest and write obversa.lock.hcl")
	addProgressFlag(cmd, &progress)
	return cmd
}

// existingRun explains why a run id cannot be started again: another
// watchdog holds it (PROCESS_LOCKED, exit 1), or it exists and can only be
// resumed (exit 2).
func existingRun(ctx context.Context, pr *watchdog.Prepared, cause error) error {
	st, err := store.Open(pr.Plan.Storage.Directory, pr.Plan.Namespace)
	if err != nil {
		return failedErr(err)
	}
	run, err := store.OpenRunDir(ctx, st.RunDir(pr.Plan.RunID), store.Policy{})
	if err != nil {
		return failedErr(err)
	}
	defer run.Close()
	owner, err := run.Lock(ctx)
	if err != nil {
		return failedErr(err)
	}
	_ = owner.Release()
	return usageErr(fmt.Errorf("%w; choose another --run-id, or carry it on with `obversa resume %s`", cause, run.Dir()))
}

// stopContext is cancelled by the first SIGINT or SIGTERM (a clean stop);
// a second one exits at once, and the worker follows through its
// parent-death signal.
func stopContext() (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		<-sig
		fmt.Fprintln(os.Stderr, "stopping: the run is being stopped cleanly (press Ctrl-C again to force)")
		cancel()
		<-sig
		os.Exit(130)
	}()
	return ctx, func() { signal.Stop(sig); cancel() }
}

// pauseSignal returns a channel closed by the first SIGUSR1: what
// `obversa stop --pause` sends a run's watchdog.
func pauseSignal() <-chan struct{} {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGUSR1)
	pause := make(chan struct{})
	go func() {
		<-sig
		signal.Stop(sig)
		fmt.Fprintln(os.Stderr, "pausing: the worker is being stopped and the run paused (obversa resume carries it on)")
		close(pause)
	}()
	return pause
}

// refusal turns a Prepare error into a usage error; run file diagnostics
// travel as diagnostics, printed with their source snippets (or in the
// refusal object of --json).
func refusal(err error) error {
	var de *watchdog.DiagnosticsError
	if errors.As(err, &de) {
		return diagsErr(de.Diags)
	}
	return usageErr(fmt.Errorf("the run was not started: %w", err))
}
