package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/obversa/obversa/host/graph"
	"github.com/obversa/obversa/host/runstate"
	"github.com/obversa/obversa/host/watchdog"
	"github.com/obversa/obversa/store"
)

// approvalObject is what `approve --json` prints first: the decision and
// who recorded it.
type approvalObject struct {
	Position string `json:"position"`
	Decision string `json:"decision"`
	// RecordedBy is "worker" when the run's live worker recorded the
	// decision (Request is the id of its request), "approve" when approve
	// recorded it on a paused run (Request is "": no request was made).
	RecordedBy string `json:"recorded_by"`
	Request    string `json:"request"`
}

func newApproveCmd(g *globals) *cobra.Command {
	var deny, noResume, asJSON bool
	var timeout time.Duration
	var progress string
	cmd := &cobra.Command{
		Use:   "approve [--deny] [--no-resume] [--json] RUN POSITION",
		Short: "Decide a position waiting for approval and carry the run on",
		Long: `Records allow (or, with --deny, deny) for a position paused for approval, and
carries the run on in the foreground, as ` + "`obversa resume`" + ` would: an allowed
position starts, a denied one fails DENIED, and the rest of the graph goes on.

On a paused run the decision is recorded at once, then the run is resumed here
(--no-resume only records it; a later bare ` + "`obversa resume RUN`" + ` carries it on).
On a run whose worker is live, the decision is queued for the worker, which records
it itself and carries the position on at once; approve waits up to --timeout for
its answer, then follows the run to its result (--no-resume returns at once).
One position takes one decision: a second approve or deny is refused, naming the
decision already recorded.

With --json, approve prints the decision {position, decision, recorded_by,
request}, then, when it carried the run on, the run's result object.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ref, err := g.findRun(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			defer ref.Close()
			dir := ref.Shell()
			mode, err := progressMode(progress, asJSON)
			if err != nil {
				return err
			}
			position := args[1]
			// Signals are taken before the run's lock is: while approve
			// holds it to record the decision, it is what `obversa stop`
			// signals (stopDuringDecision).
			sigs, stopSigs := watchSignals()
			defer stopSigs()
			torn := tornBefore(ref)
			a, err := watchdog.Approve(sigs.prep, ref, position, deny, timeout)
			torn.said(cmd.ErrOrStderr())
			if sigs.ctx.Err() != nil {
				return stopDuringDecision(cmd, ref, position, asJSON)
			}
			if sigs.prep.Err() != nil {
				return failedErr(fmt.Errorf("interrupted: %s", recordedDecision(cmd.Context(), ref, position)))
			}
			if err != nil {
				return approveErr(cmd.Context(), ref, position, err)
			}
			w := cmd.OutOrStdout()
			if obj := newApprovalObject(a); asJSON {
				writeJSON(w, obj)
			} else {
				printApproval(cmd, obj, dir, noResume)
			}
			if noResume {
				return nil
			}
			if a.Request != "" {
				// Another watchdog carries the run: following it takes
				// only Ctrl-C and SIGTERM, to stop following.
				stopSigs()
				return followToResult(cmd.Context(), cmd.OutOrStdout(), ref, mode, asJSON)
			}
			ctx := sigs.ctx
			res, _, err := resumeRun(sigs, ref, watchdog.ResumeOptions{Position: position}, mode, func(ctx context.Context) string {
				return recordedDecision(ctx, ref, position)
			})
			if err != nil {
				return err
			}
			return report(ctx, w, res, ref, asJSON)
		},
	}
	cmd.Flags().BoolVar(&deny, "deny", false, "deny instead of allow: the position then fails DENIED")
	cmd.Flags().BoolVar(&noResume, "no-resume", false, "only record the decision; do not carry the run on or follow it")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the decision, then the run's result, as JSON objects")
	positiveDurationVar(cmd.Flags(), &timeout, "timeout", watchdog.DefaultApproveTimeout, "how long approve waits for a live worker's answer", "how long to wait for a live worker's answer")
	addProgressFlag(cmd, &progress)
	return cmd
}

// newApprovalObject is what approve prints of the decision a recorded:
// by the run's live worker when it answered a request, else by approve.
func newApprovalObject(a *watchdog.Approval) approvalObject {
	obj := approvalObject{Position: a.Position, Decision: a.Decision, RecordedBy: "approve", Request: a.Request}
	if a.Request != "" {
		obj.RecordedBy = "worker"
	}
	return obj
}

func printApproval(cmd *cobra.Command, a approvalObject, dir string, noResume bool) {
	verb := "approved"
	if a.Decision == "deny" {
		verb = "denied"
	}
	switch {
	case a.RecordedBy == "worker" && noResume:
		fmt.Fprintf(cmd.OutOrStdout(), "%s %s: recorded by the run's live worker (request %s); the run carries on (obversa status %s)\n", verb, a.Position, a.Request, dir)
	case a.RecordedBy == "worker":
		fmt.Fprintf(cmd.ErrOrStderr(), "%s %s: recorded by the run's live worker (request %s); following the run\n", verb, a.Position, a.Request)
	case noResume:
		fmt.Fprintf(cmd.OutOrStdout(), "%s %s; carry the run on with `obversa resume %s`\n", verb, a.Position, dir)
	default:
		fmt.Fprintf(cmd.ErrOrStderr(), "%s %s; carrying the run on\n", verb, a.Position)
	}
}

// approveErr is the command's error for watchdog.Approve's refusal err
// of the decision on position: a position not awaiting approval is a
// usage error naming the closest one, a decided one APPROVAL_DECIDED, an
// empty record a failure, anything else a write error.
func approveErr(ctx context.Context, ref runRef, position string, err error) error {
	switch {
	case errors.Is(err, runstate.ErrNotAwaitingApproval):
		return usageErr(fmt.Errorf("%w%s", err, suggestPosition(ctx, ref, position)))
	case errors.Is(err, watchdog.ErrAlreadyDecided):
		// A refusal, not a wrong command line: APPROVAL_DECIDED.
		return &exitError{code: exitUsage, err: notCarriedOn(ctx, ref, position, err), reason: CodeApprovalDecided}
	case errors.Is(err, runstate.ErrEmptyRecord):
		return failedErr(runErr(ref, err))
	default:
		return writeErr(err)
	}
}

// stopDuringDecision ends the run `obversa stop` asked approve to stop
// while approve held it to record the decision on position: the stop
// promised STOPPED, so STOPPED is recorded as for a resume stopped before
// its takeover (stopBeforeTakeover), whether the decision was recorded or not, and the
// run is not carried on.
func stopDuringDecision(cmd *cobra.Command, ref runRef, position string, asJSON bool) error {
	ctx := context.WithoutCancel(cmd.Context())
	res, _, err := stopBeforeTakeover(ctx, ref)
	if err != nil {
		return err
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "stopped: %s\n", recordedDecision(ctx, ref, position))
	return report(ctx, cmd.OutOrStdout(), res, ref, asJSON)
}

// recordedDecision says what the record holds of position's decision, for
// an approve that recorded it and then found the run held by another
// process (a stop or a resume took the lock in between): the decision
// stands, only carrying the run on was not done. It reads the record
// again rather than trust what approve did before.
func recordedDecision(ctx context.Context, ref runRef, position string) string {
	st, _, err := foldRun(ctx, ref)
	if err != nil {
		return fmt.Sprintf("the decision on %s was recorded, the record cannot be read now (%v), and the run was not carried on here", position, err)
	}
	n := st.Graph().AtPosition(position)
	if n == nil || n.Approved == "" {
		return fmt.Sprintf("the record holds no decision on %s, and the run was not carried on here", position)
	}
	return fmt.Sprintf("the decision %s on %s is recorded, but the run was not carried on here", n.Approved, position)
}

// notCarriedOn adds to err (ErrAlreadyDecided) the plain resume that
// carries the run on when the position is still paused at its decision
// and nothing holds the run (approve --no-resume, or an approve that
// ended before it resumed the run).
func notCarriedOn(ctx context.Context, ref runRef, position string, err error) error {
	st, o, oerr, ferr := foldOwner(ctx, ref)
	// The lock approve just released still names this process, alive.
	if ferr != nil || oerr != nil || o.Live && !(o.Here && o.Holder.PID == os.Getpid()) {
		return err
	}
	if n := st.Graph().AtPosition(position); n == nil || n.Status != graph.StatusPaused {
		return err
	}
	return fmt.Errorf("%w; the run was not carried on since: obversa resume %s carries it on", err, ref.Shell())
}

// followToResult follows a run another watchdog carries until it records
// a result, showing its progress, then reports the result to out.
// Interrupting only stops following.
func followToResult(ctx context.Context, out io.Writer, ref runRef, mode string, asJSON bool) error {
	dir := ref.Shell()
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	view := watchRun(ref, mode, os.Stderr)
	res, err := waitResult(ctx, ref)
	view.Stop()
	if ctx.Err() != nil {
		fmt.Fprintf(os.Stderr, "stopped following; the run carries on: obversa status %s\n", dir)
		return nil
	}
	if err != nil {
		return failedErr(err)
	}
	return report(ctx, out, res, ref, asJSON)
}

// errHaveResult stops a follow once the fold has a result.
var errHaveResult = errors.New("result")

// waitResult folds the run's record as it grows until it has a result
// (terminal, or paused).
func waitResult(ctx context.Context, ref runRef) (*runstate.Result, error) {
	run, err := ref.OpenReadOnly(ctx)
	if err != nil {
		return nil, err
	}
	defer run.Close()
	st, err := runstate.Load(ctx, run)
	if err != nil {
		return nil, err
	}
	if r := st.Result(); r != nil {
		return r, nil
	}
	err = run.Follow(ctx, st.Rev()+1, func(e store.Event) error {
		if err := st.Apply(e); err != nil {
			return err
		}
		if st.Result() != nil {
			return errHaveResult
		}
		return nil
	})
	if errors.Is(err, errHaveResult) {
		return st.Result(), nil
	}
	return nil, err
}
