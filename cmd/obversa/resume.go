package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/obversa/obversa/host/runstate"
	"github.com/obversa/obversa/host/runview"
	"github.com/obversa/obversa/host/watchdog"
	"github.com/obversa/obversa/store"
)

func newResumeCmd(g *globals) *cobra.Command {
	var o watchdog.ResumeOptions
	var asJSON bool
	var result, progress string
	cmd := &cobra.Command{
		Use:   "resume [--position POS [--reconciled=done|not-done [--result JSON]] | --preflight EVENT_ID] RUN",
		Short: "Carry a stored run on: offer a paused position again, or take over a run whose watchdog died",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ref, err := g.findRun(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			defer ref.Close()
			if result != "" {
				if !json.Valid([]byte(result)) {
					return usageErr(fmt.Errorf("--result %q is not JSON", result))
				}
				o.Result = json.RawMessage(result)
			}
			mode, err := progressMode(progress, asJSON)
			if err != nil {
				return err
			}
			ctx, stop := stopContext()
			defer stop()
			res, done, err := resumeRun(ctx, ref, o, mode)
			if err != nil {
				return err
			}
			if done && !asJSON {
				fmt.Fprintln(cmd.ErrOrStderr(), "the run already ended; nothing was changed")
			}
			if !asJSON {
				preflightHint(cmd.ErrOrStderr(), res, ref.String())
			}
			return report(ctx, cmd.OutOrStdout(), res, ref, asJSON)
		},
	}
	cmd.Flags().StringVar(&o.Position, "position", "", "the open position to offer again (dag/<node>/<n>)")
	cmd.Flags().StringVar(&o.Reconciled, "reconciled", "", "for a reconcile-attempt pause: done or not-done")
	cmd.Flags().StringVar(&result, "result", "", "with --reconciled=done: the node's result as JSON (default null)")
	cmd.Flags().StringVar(&o.Preflight, "preflight", "", "the event id of the preflight pause to resume (preflight_event_id, or as printed by obversa preflight interrupt)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result object {run_id, kind, code, output}")
	addProgressFlag(cmd, &progress)
	return cmd
}

// resumeRun carries the run at dir on, showing its progress in mode once
// it is supervised, and turns refusals into their exit statuses (a
// mistyped position gets a suggestion).
func resumeRun(ctx context.Context, ref runRef, o watchdog.ResumeOptions, mode string) (*runstate.Result, bool, error) {
	var view *watch
	o.Supervise.Started = func() { view = watchRun(ref, mode, os.Stderr) }
	o.Supervise.Pause = pauseSignal()
	res, done, err := watchdog.Resume(ctx, ref, o)
	if view != nil {
		view.Stop()
	}
	switch {
	case errors.Is(err, store.ErrProcessLocked):
		return nil, false, failedErr(fmt.Errorf("%w; the run is live: `obversa approve` hands decisions to its worker, `obversa stop` stops it, and resume carries it on once it has ended", err))
	case errors.Is(err, watchdog.ErrResumePosition) && o.Position != "":
		return nil, false, usageErr(fmt.Errorf("%w%s", err, suggestPosition(ctx, ref, o.Position)))
	case errors.Is(err, watchdog.ErrRunNotPaused), errors.Is(err, watchdog.ErrResumePosition),
		errors.Is(err, watchdog.ErrResumeEventMismatch):
		return nil, false, usageErr(err)
	case err != nil:
		return nil, false, failedErr(err)
	}
	return res, done, nil
}

// suggestPosition is " (did you mean …?)" for a position the run does not
// have open, from its fold; "" when nothing is close.
func suggestPosition(ctx context.Context, ref runRef, position string) string {
	st, _, err := foldRun(ctx, ref)
	if err != nil {
		return ""
	}
	if s := runview.SuggestPosition(st, position); s != position {
		return runview.DidYouMean(s)
	}
	return ""
}
