package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/obversa/obversa/host/runstate"
	"github.com/obversa/obversa/host/runview"
	"github.com/obversa/obversa/host/watchdog"
	"github.com/obversa/obversa/store"
)

// Actions of `stop --json`.
const (
	stopSignalled = "signalled" // the run's live watchdog was asked to stop or pause it
	stopRecorded  = "recorded"  // STOPPED was recorded for a run nothing ran
	stopNothing   = "nothing"   // nothing to do: the run is already paused or held by no watchdog
	stopEnded     = "ended"     // nothing to do: the run already has its terminal result
)

// stopObject is what `stop --json` prints.
type stopObject struct {
	Dir    string `json:"dir"`
	Action string `json:"action"`
	// Pause is true for --pause.
	Pause       bool             `json:"pause"`
	WatchdogPID int              `json:"watchdog_pid,omitempty"`
	Phase       string           `json:"phase"`
	Result      *runstate.Result `json:"result,omitempty"`
}

func newStopCmd(g *globals) *cobra.Command {
	var yes, pause, asJSON bool
	cmd := &cobra.Command{
		Use:   "stop [--yes | --pause] [--json] RUN",
		Short: "End a run for good (STOPPED), or pause it so it can be carried on later (--pause)",
		Long: `stop ends a run for good: its watchdog stops the worker and records STOPPED, or, when no
watchdog holds the run (paused, interrupted), stop records STOPPED itself. A stopped
run cannot be resumed, so stop asks first when the run has work left (--yes skips the
question; without a terminal to ask on, stop refuses unless --yes is given).

stop --pause pauses a live run instead: its watchdog stops the worker and records a
resumable pause (OPERATOR_PAUSE), so ` + "`obversa resume RUN`" + ` carries it on later.
Attempts in flight are cut off as by a crash: on resume, retry-safe ones run again and
the others ask whether they took effect. A run already paused needs nothing.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if yes && pause {
				return usageErr(errors.New("--yes and --pause do not go together: --pause asks nothing"))
			}
			ref, err := g.findRun(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			defer ref.Close()
			dir := ref.String()
			st, o, ownerErr, err := foldOwner(cmd.Context(), ref)
			if err != nil {
				return err
			}
			obj := stopObject{Dir: dir, Pause: pause}
			if st.Finished() != nil {
				return stopIdle(cmd, ref, obj, asJSON)
			}
			if ownerErr != nil {
				return failedErr(ownerErr)
			}
			live := o.Live
			obj.Phase = runview.Phase(st, live)
			if live && !o.Here {
				// Asked before anything else: signals reach this host's
				// processes only.
				return signalHolder(ref, o, stopSignal)
			}
			if pause {
				return pauseRun(cmd, obj, ref, o, asJSON)
			}
			if !yes {
				if err := confirmStop(cmd, st, live, ref.Shell()); err != nil {
					return err
				}
			}
			if live {
				return signalStop(cmd, obj, ref, o, asJSON)
			}
			return stopIdle(cmd, ref, obj, asJSON)
		},
	}
	cmd.Flags().BoolVar(&yes, "yes", false, "stop without asking, although a stopped run cannot be resumed")
	cmd.Flags().BoolVar(&pause, "pause", false, "pause the run instead, so that obversa resume carries it on later")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print what was done as one JSON object {dir, action, pause, watchdog_pid, phase, result}")
	return cmd
}

// pauseRun asks a live run's watchdog to pause it (pauseSignal); a run no
// watchdog runs needs nothing. o is the run's owner as stop read it.
func pauseRun(cmd *cobra.Command, obj stopObject, ref runRef, o watchdog.Owner, asJSON bool) error {
	w := cmd.OutOrStdout()
	run := ref.Shell()
	if o.Live {
		h := o.Holder
		if err := signalHolder(ref, o, pauseSignal); err != nil {
			return err
		}
		obj.Action, obj.WatchdogPID = stopSignalled, h.PID
		if asJSON {
			writeJSON(w, obj)
			return nil
		}
		fmt.Fprintf(w, "asked watchdog pid %d on %s to pause the run; carry it on later with `obversa resume %s`\n", h.PID, h.Host, run)
		return nil
	}
	obj.Action = stopNothing
	if asJSON {
		writeJSON(w, obj)
		return nil
	}
	fmt.Fprintf(w, "the run is %s and nothing runs it; nothing to pause: carry it on with `obversa resume %s`\n", obj.Phase, run)
	return nil
}

// signalStop asks the run's live watchdog o to stop the run (stopSignal),
// which records STOPPED; a holder that is no watchdog is refused
// (signalHolder).
func signalStop(cmd *cobra.Command, obj stopObject, ref runRef, o watchdog.Owner, asJSON bool) error {
	h := o.Holder
	if err := signalHolder(ref, o, stopSignal); err != nil {
		return err
	}
	obj.Action, obj.WatchdogPID = stopSignalled, h.PID
	if asJSON {
		writeJSON(cmd.OutOrStdout(), obj)
		return nil
	}
	fmt.Fprintf(cmd.OutOrStdout(), "asked watchdog pid %d on %s to stop the run; it records STOPPED\n", h.PID, h.Host)
	return nil
}

// confirmStop asks on the terminal whether to end a run with work left;
// without a terminal it refuses (exit 2), since stopping cannot be undone.
// held says whether a live owner holds the run.
func confirmStop(cmd *cobra.Command, st *runstate.State, held bool, dir string) error {
	c := runview.CountNodes(st, held)
	left := fmt.Sprintf("%d of %d nodes are not done", c.Total-c.Done, c.Total)
	if !isTerminal(os.Stdin) {
		return usageErr(fmt.Errorf("the run has work left (%s) and a stopped run cannot be resumed; nothing was asked, since stdin is not a terminal: pass --yes to stop it, or --pause to pause it so `obversa resume %s` carries it on", left, dir))
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "Stop run %s? %s.\nA stopped run cannot be resumed; `obversa stop --pause %s` pauses it instead.\nStop it for good? [y/N] ", st.Start().RunID, left, dir)
	answer, _ := bufio.NewReader(os.Stdin).ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(answer)) {
	case "y", "yes":
		return nil
	}
	return failedErr(errors.New("not stopped: the answer was not yes"))
}

// stopIdle ends a run no watchdog holds (paused, or interrupted) by
// recording STOPPED; an ended run is left alone. A watchdog that took the
// run over after stop looked (a resume or approve starting while stop
// asked its question) is asked to stop it instead: it records STOPPED,
// even before its takeover (stopBeforeTakeover). obj is what --json
// prints, with Dir and Pause set.
func stopIdle(cmd *cobra.Command, ref runRef, obj stopObject, asJSON bool) error {
	ctx := cmd.Context()
	// A holder that lets the run go again (an approve between recording
	// its decision and carrying the run on) leaves it to this command.
	for try := 0; ; try++ {
		torn := tornBefore(ref)
		res, err := watchdog.StopIdle(ctx, ref)
		torn.said(cmd.ErrOrStderr())
		switch {
		case errors.Is(err, watchdog.ErrAlreadyEnded):
			// Nothing to stop: the settled result is the answer, with its
			// exit status (0 complete, 1 failed).
			if asJSON {
				obj.Action, obj.Phase, obj.Result = stopEnded, string(res.Phase()), res
				writeJSON(cmd.OutOrStdout(), obj)
				return exitFor(res)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "the run already ended; nothing to stop\n")
			return report(ctx, cmd.OutOrStdout(), res, ref, false)
		case errors.Is(err, store.ErrProcessLocked):
			if o, live := liveHolder(ctx, ref); live {
				obj.Phase = string(runstate.PhaseRunning)
				return signalStop(cmd, obj, ref, o, asJSON)
			}
			if try < 2 {
				continue
			}
			return lockedRefusal(ctx, ref, err, "; `obversa stop` again stops it through that watchdog")
		case err != nil:
			return writeErr(err)
		}
		if asJSON {
			obj.Action, obj.Phase, obj.Result = stopRecorded, string(runstate.PhaseStopped), res
			writeJSON(cmd.OutOrStdout(), obj)
			return nil
		}
		fmt.Fprintf(cmd.OutOrStdout(), "recorded STOPPED for %s; it cannot be resumed\n", obj.Dir)
		return nil
	}
}
