package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/obversa/obversa/host/runstate"
	"github.com/obversa/obversa/host/watchdog"
	"github.com/obversa/obversa/store"
)

func newResumeCmd(g *globals) *cobra.Command {
	var o watchdog.ResumeOptions
	var asJSON, progress bool
	var result string
	cmd := &cobra.Command{
		Use:   "resume [--position POS [--reconciled=done|not-done [--result JSON]] | --preflight EVENT_ID] RUN",
		Short: "Carry a stored run on: offer a paused position again, or take over a run whose watchdog died",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := g.runDir(args[0])
			if err != nil {
				return err
			}
			if result != "" {
				if !json.Valid([]byte(result)) {
					return usageErr(fmt.Errorf("--result %q is not JSON", result))
				}
				o.Result = json.RawMessage(result)
			}
			ctx, stop := stopContext()
			defer stop()
			if progress || (!asJSON && isTerminal(os.Stderr)) {
				o.Supervise.Progress = progressPrinter(os.Stderr)
			}
			res, done, err := watchdog.Resume(ctx, dir, o)
			switch {
			case errors.Is(err, store.ErrProcessLocked):
				return failedErr(fmt.Errorf("%w; the run is live: `obversa approve` hands decisions to its worker, `obversa stop` stops it, and resume carries it on once it has ended", err))
			case errors.Is(err, watchdog.ErrRunNotPaused), errors.Is(err, watchdog.ErrResumePosition),
				errors.Is(err, watchdog.ErrResumeEventMismatch):
				return usageErr(err)
			case err != nil:
				return failedErr(err)
			}
			if done && !asJSON {
				fmt.Fprintln(cmd.ErrOrStderr(), "the run already ended; nothing was changed")
			}
			if !asJSON {
				preflightHint(cmd.ErrOrStderr(), res, dir)
			}
			return report(ctx, cmd.OutOrStdout(), res, dir, asJSON)
		},
	}
	cmd.Flags().StringVar(&o.Position, "position", "", "the open position to offer again (dag/<node>/<n>)")
	cmd.Flags().StringVar(&o.Reconciled, "reconciled", "", "for a reconcile-attempt pause: done or not-done")
	cmd.Flags().StringVar(&result, "result", "", "with --reconciled=done: the node's result as JSON (default null)")
	cmd.Flags().StringVar(&o.Preflight, "preflight", "", "the event id of the preflight pause to resume (preflight_event_id, or as printed by obversa preflight interrupt)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result object {run_id, kind, code, output}")
	cmd.Flags().BoolVar(&progress, "progress", false, "print progress lines even when stderr is not a terminal")
	return cmd
}

func newApproveCmd(g *globals) *cobra.Command {
	var deny bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "approve [--deny] [--timeout D] RUN POSITION",
		Short: "Decide a position waiting for approval: recorded at once, or by the run's live worker",
		Long: `Records allow (or, with --deny, deny) for a position paused for approval.

On a paused run the decision is recorded at once; ` + "`obversa resume --position`" + ` then acts on it.
On a run whose worker is live, the decision is queued for the worker, which records it
itself and carries the position on at once (allowed: it starts; denied: it fails DENIED);
approve waits up to --timeout for its answer. One position takes one decision: a second
approve or deny is refused, naming the decision already recorded.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := g.runDir(args[0])
			if err != nil {
				return err
			}
			a, err := watchdog.Approve(cmd.Context(), dir, args[1], deny, timeout)
			switch {
			case errors.Is(err, runstate.ErrNotAwaitingApproval), errors.Is(err, watchdog.ErrAlreadyDecided):
				return usageErr(err)
			case err != nil:
				return failedErr(err)
			}
			verb := "approved"
			if deny {
				verb = "denied"
			}
			if a.Request != "" {
				fmt.Fprintf(cmd.OutOrStdout(), "%s %s: recorded by the run's live worker (request %s); the run carries on\n", verb, args[1], a.Request)
				return nil
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s %s; run `obversa resume --position %s %s` to carry on\n", verb, args[1], args[1], args[0])
			return nil
		},
	}
	cmd.Flags().BoolVar(&deny, "deny", false, "deny instead of allow: the position then fails DENIED")
	cmd.Flags().DurationVar(&timeout, "timeout", watchdog.DefaultApproveTimeout, "how long to wait for a live worker's answer")
	return cmd
}
