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
	var asJSON, force, yes bool
	var result, progress string
	cmd := &cobra.Command{
		Use:   "resume [--position POS [--reconciled=done|not-done [--result JSON]] | --preflight EVENT_ID] [--force-takeover [--yes]] RUN",
		Short: "Carry a stored run on: offer a paused position again, or take over a run whose watchdog died",
		Long: `resume carries a stored run on. A paused position is offered again with --position (after
approve for an approval; with --reconciled for an attempt a crash left uncertain), a
preflight pause with --preflight. A run whose watchdog died is taken over: its left-over
processes on this host are stopped, and a new watchdog supervises it here.

A run kept in a database can be taken over from any host once its owner's lease has
expired. --force-takeover takes it at once, for a person who has confirmed that the
owner's host is gone: it shows the lease and asks (--yes answers for you). The old
owner is fenced — nothing it writes reaches the record — but its processes are its
host's to stop (docs/storage-postgres.md, "What a takeover promises").

Ctrl-C (or SIGTERM) pauses the run again (OPERATOR_PAUSE), as on ` + "`obversa run`" + `; a
second Ctrl-C exits at once and leaves it interrupted.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := resumeFlags(&o, result, force, yes); err != nil {
				return err
			}
			ref, err := g.findRun(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			defer ref.Close()
			mode, err := progressMode(progress, asJSON)
			if err != nil {
				return err
			}
			sigs, stop := watchSignals()
			defer stop()
			ctx := sigs.ctx
			if force {
				if o.Lock, err = forceTakeover(sigs.prep, ref, os.Stdin, cmd.ErrOrStderr(), yes); err != nil {
					return err
				}
			}
			torn := tornBefore(ref)
			res, done, err := resumeRun(sigs, ref, o, mode, nil)
			moved := torn.said(cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			if done && !asJSON {
				fmt.Fprintln(cmd.ErrOrStderr(), alreadyEnded(moved))
			}
			if !asJSON {
				preflightHint(cmd.ErrOrStderr(), res, ref.Shell())
			}
			return report(ctx, cmd.OutOrStdout(), res, ref, asJSON)
		},
	}
	cmd.Flags().StringVar(&o.Position, "position", "", "the open position to offer again (dag/<node>/<n>)")
	cmd.Flags().StringVar(&o.Reconciled, "reconciled", "", "for a reconcile-attempt pause: done or not-done")
	cmd.Flags().StringVar(&result, "result", "", "with --reconciled=done: the node's result as JSON; without it the result is null, refused when a downstream prompt or input needs a value (--result null records null all the same)")
	cmd.Flags().StringVar(&o.Preflight, "preflight", "", "the event id of the preflight pause to resume (preflight_event_id, or as printed by obversa preflight interrupt)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result object {run_id, kind, code, output}")
	addProgressFlag(cmd, &progress)
	cmd.Flags().BoolVar(&force, "force-takeover", false, "take a run kept in a database over although its owner's lease has not expired, once you have confirmed its host is gone")
	cmd.Flags().BoolVar(&yes, "yes", false, "with --force-takeover: do not ask")
	return cmd
}

// resumeFlags checks resume's flags against each other before the run
// is looked up, and sets o.Result from --result: a mistake is a usage
// error (exit 2) saying what goes with what.
func resumeFlags(o *watchdog.ResumeOptions, result string, force, yes bool) error {
	switch o.Reconciled {
	case "", "done", "not-done":
	default:
		return usageErr(fmt.Errorf("--reconciled=%s: want done (the attempt's effect happened) or not-done (it did not)", echoArg(o.Reconciled)))
	}
	if o.Reconciled != "" && o.Position == "" {
		return usageErr(errors.New("--reconciled answers a reconcile-attempt pause: add --position POS, the position status names"))
	}
	if result != "" && o.Reconciled != "done" {
		return usageErr(fmt.Errorf("--result is the node's result when its attempt took effect: it goes with --reconciled=done, not %s", echoArg(o.Reconciled)))
	}
	if result != "" {
		if err := json.Unmarshal([]byte(result), new(json.RawMessage)); err != nil {
			// Say where and why, as encoding/json does; a plain text
			// result is a JSON string: quote it.
			return usageErr(fmt.Errorf("--result %s is not JSON (%v): give the node's result as JSON, text as a quoted string (--result '\"done\"')",
				echoArg(result), err))
		}
		o.Result = json.RawMessage(result)
	}
	if yes && !force {
		return usageErr(errors.New("--yes answers --force-takeover's question; add --force-takeover, or drop --yes"))
	}
	return nil
}

// resumeRun carries the run at dir on, showing its progress in mode once
// it is supervised, and turns refusals into their exit statuses (a
// mistyped position gets a suggestion). Ctrl-C and SIGTERM pause the run
// it carries (sigs).
func resumeRun(sigs *signals, ref runRef, o watchdog.ResumeOptions, mode string, doneBefore func(context.Context) string) (*runstate.Result, bool, error) {
	ctx := sigs.ctx
	var view *watch
	o.Supervise.Started = func() { view = watchRun(ref, mode, os.Stderr) }
	sigs.setRun(ref.Shell())
	o.Supervise.Pause = sigs.pause
	res, done, err := watchdog.Resume(ctx, ref, o)
	if view != nil {
		view.Stop()
	}
	switch {
	case errors.Is(err, store.ErrProcessLocked):
		if doneBefore != nil {
			return nil, false, lockedRefusalDone(ctx, ref, err, doneBefore(ctx), "`obversa resume "+ref.Shell()+"` carries the run on", lockedHint(ref))
		}
		return nil, false, lockedRefusal(ctx, ref, err, lockedHint(ref))
	case errors.Is(err, watchdog.ErrResumePosition) && o.Position != "":
		return nil, false, usageErr(fmt.Errorf("%w%s", err, suggestPosition(ctx, ref, o.Position)))
	case errors.Is(err, store.ErrInvalidEvent) && o.Result != nil:
		// JSON the record cannot hold as it is (a number beyond a
		// double's exact range, a lone surrogate): the operator's value.
		return nil, false, usageErr(fmt.Errorf("--result cannot be recorded as the node's result, nothing was changed: %w", err))
	case errors.Is(err, store.ErrStorageLimitExceeded) && o.Result != nil:
		return nil, false, usageErr(resultTooLarge(err))
	case errors.Is(err, store.ErrStorageFull):
		return nil, false, usageErr(fmt.Errorf("%w; the run was not carried on: free space on that file system, then resume again", err))
	case errors.Is(err, watchdog.ErrRunNotPaused), errors.Is(err, watchdog.ErrResumePosition),
		errors.Is(err, watchdog.ErrResumeEventMismatch), errors.Is(err, watchdog.ErrResultNeeded):
		return nil, false, usageErr(err)
	case errors.Is(err, runstate.ErrEmptyRecord):
		return nil, false, failedErr(runErr(ref, err))
	case errors.Is(err, context.Canceled) && ctx.Err() != nil:
		return stopBeforeTakeover(ctx, ref)
	case err != nil:
		return nil, false, writeErr(err)
	}
	return res, done, nil
}

// stopBeforeTakeover ends the run `obversa stop` asked this resume to
// stop before it had recorded its takeover (ctx, cancelled by
// stopSignal): nothing of the resume is recorded and its lock is released,
// so STOPPED is recorded under the lock taken again, with the message of
// a watchdog's stop, which is what stop promised (docs/cli.md, stop).
func stopBeforeTakeover(ctx context.Context, ref runRef) (*runstate.Result, bool, error) {
	ctx = context.WithoutCancel(ctx)
	res, err := watchdog.StopBeforeTakeover(ctx, ref)
	switch {
	case errors.Is(err, watchdog.ErrAlreadyEnded):
		return res, true, nil
	case errors.Is(err, store.ErrProcessLocked):
		return nil, false, lockedRefusal(ctx, ref, err, "; `obversa stop` again stops it through that watchdog")
	case err != nil:
		return nil, false, failedErr(err)
	}
	return res, false, nil
}

// suggestPosition is " (did you mean …?)" for a position the run does not
// have open, from its fold: the paused position of a node named by its
// id, else the closest paused position; "" when no paused one is close or
// the run ended.
func suggestPosition(ctx context.Context, ref runRef, position string) string {
	st, _, err := foldRun(ctx, ref)
	if err != nil || st.Finished() != nil {
		// An ended run has no position to offer in its place.
		return ""
	}
	if s := runview.SuggestPaused(st, position); s != "" && s != position {
		return runview.DidYouMean(s)
	}
	return ""
}

// resultTooLarge explains a --result the run's record refused as larger
// than an event may hold: its recorded size, the limit and where it is
// set, that the run keeps the limit it started with, and what to do
// instead. Nothing was recorded (the batch is refused whole).
func resultTooLarge(err error) error {
	var le *store.LimitError
	if !errors.As(err, &le) || le.Limit != "max_event_payload_bytes" {
		return fmt.Errorf("--result cannot be recorded as the node's result, nothing was recorded: %w", err)
	}
	return fmt.Errorf("%w: --result makes the node's recorded result (graph:node-completed) %d bytes, more than this run's storage.max_event_payload_bytes = %d, set in the storage block of the run file it started from; "+
		"the run keeps the limit it started with, so raising it in the run file does not help this run. Nothing was recorded: "+
		"give a smaller --result (the fields the nodes after it read), or, if running the node again is safe, --reconciled=not-done (a result larger than an event is then kept as an artifact)",
		store.ErrStorageLimitExceeded, le.Size, le.Max)
}

// alreadyEnded is what resume says of a run that had already ended:
// nothing was changed, or, when a torn tail was moved aside (moved), nothing
// else.
func alreadyEnded(moved bool) string {
	if moved {
		return "the run already ended; nothing else was changed"
	}
	return "the run already ended; nothing was changed"
}
