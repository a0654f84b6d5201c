package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/obversa/obversa/host/graph"
	"github.com/obversa/obversa/host/runstate"
	"github.com/obversa/obversa/host/stream"
	"github.com/obversa/obversa/host/watchdog"
	"github.com/obversa/obversa/plugin"
)

func newStatusCmd(g *globals) *cobra.Command {
	var asJSON, watch bool
	cmd := &cobra.Command{
		Use:   "status [--json] [--watch] RUN",
		Short: "Show a stored run's phase, worker, active occurrences and usage (read-only)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !watch {
				collectAtExit()
			}
			ref, err := g.findRun(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			defer ref.Close()
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			// One handle for every report: --watch folds only what was
			// recorded since the last.
			sw, err := watchdog.WatchStatus(ctx, ref)
			if err != nil {
				return failedErr(notStartedFix(ref, err))
			}
			defer sw.Close()
			for {
				r, err := sw.Report(ctx)
				if err != nil {
					return failedErr(notStartedFix(ref, err))
				}
				if asJSON {
					b, _ := json.Marshal(r)
					fmt.Fprintln(cmd.OutOrStdout(), string(b))
				} else {
					if watch {
						fmt.Fprintln(cmd.OutOrStdout(), "---", time.Now().Format("15:04:05"))
					}
					out := bufio.NewWriterSize(cmd.OutOrStdout(), 64<<10)
					printStatus(out, r, ref.Shell())
					_ = out.Flush() // as unbuffered prints, a failed write of stdout is not the run's fault
				}
				if !watch || sw.Over() {
					return nil
				}
				select {
				case <-ctx.Done():
					return nil
				case <-time.After(time.Second):
				}
			}
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON (one object per line with --watch)")
	cmd.Flags().BoolVar(&watch, "watch", false, "print the report every second until the run has ended (completed, failed or stopped) and its cleanup is recorded; a paused or interrupted run is watched until it ends or you interrupt")
	return cmd
}

// collectAtExit stops the garbage collector of a process that reads a
// run once and exits (one status report) until its heap first nears
// oneShotHeap (collectLate). Nearly all such a process allocates from a
// fold snapshot is the run's fold, live until the report is printed, so
// a collection before then marks the growing fold again and frees next
// to nothing (the status of a 102 500-event record took 22 % less CPU,
// at 5 % more resident memory). A record folded without a snapshot makes
// garbage as it goes, which the bound keeps within oneShotHeap
// (docs/decisions.md, "A one-shot status collects garbage late").
func collectAtExit() { collectLate(oneShotHeap) }

// oneShotHeap is the memory (bytes) at which collectAtExit's process
// collects for the first time: past a fold of a run of 100 000 events
// from its snapshot (about 90 MB resident), a quarter of the 1 GiB the
// garbage of folding such a run without a snapshot can reach.
const oneShotHeap = 256 << 20

// printStatus prints r for a person; run names the run in the commands
// it advises (Ref.Shell).
func printStatus(w io.Writer, r *watchdog.Report, run string) {
	fmt.Fprintf(w, "run:      %s\nphase:    %s\nevents:   %d\nelapsed:  %d ms\n", r.RunID, r.Phase, r.Events, r.ElapsedMS)
	if r.Worker != nil {
		fmt.Fprintf(w, "worker:   pid %d (alive: %v), restarts used %d, left %d\n", r.Worker.PID, r.Worker.Alive, r.RestartsUsed, r.RestartsLeft)
	}
	if r.Result != nil {
		decided := func(pos string) string { return r.Decided[pos] }
		fmt.Fprintf(w, "result:   %s\n", strings.ReplaceAll(summaryDecided(r.Result, run, decided), "\n", "\n          "))
	}
	for _, p := range r.PauseReasons {
		if d := r.Decided[p.Position]; d != "" && p.Kind == graph.PauseApproval {
			fmt.Fprintf(w, "decided:  %s: %s is recorded; obversa resume %s carries the run on\n", p.Position, d, run)
			continue
		}
		fmt.Fprintf(w, "waiting:  %s\n", pauseLine(p))
	}
	if r.CleanupVerified != nil {
		verified := "verified: nothing of the run is left"
		if !*r.CleanupVerified {
			verified = "NOT verified: processes of the run survived"
		}
		fmt.Fprintf(w, "cleanup:  %s\n", verified)
	}
	if r.LockNote != "" {
		fmt.Fprintf(w, "lock:     %s\n", r.LockNote)
	}
	// A bare resume is refused while positions wait for a person: name
	// what answers each, unless the result line did.
	hints := watchdog.AnswerHints(r.PauseReasons, run)
	switch {
	case r.Phase == watchdog.PhaseInterrupted && hints != "":
		fmt.Fprintf(w, "next:     no watchdog holds this run; %s\n", hints)
	case r.Phase == watchdog.PhaseInterrupted:
		fmt.Fprintf(w, "next:     no watchdog holds this run; carry it on with obversa resume %s\n", run)
	case r.Phase == watchdog.PhasePaused && hints != "" && (r.Result == nil || r.Result.Output == nil || len(r.Result.Output.Paused) == 0):
		fmt.Fprintf(w, "next:     %s\n", hints)
	}
	if (r.Phase == watchdog.PhasePaused || r.Phase == watchdog.PhaseInterrupted) && r.RemainingTimeoutMS != nil && *r.RemainingTimeoutMS == 0 {
		// limits.timeout counts pauses (docs/run-file.md): the advice
		// above records its answers, then the run ends at once.
		fmt.Fprintf(w, "timeout:  the run's limits.timeout has passed (it counts pauses and the time no watchdog held the run): carrying it on records the answers of positions that wait, then ends the run TIMEOUT; a recorded run keeps the limits it started with\n")
	}
	if x := r.LastExit; x != nil && r.Result == nil {
		// While the run is carried on, the last crash says why a worker
		// is (or was) restarted; a result line says it once the run ended.
		fmt.Fprintf(w, "exit:     %s, at %s\n", exitLine(x), x.At.UTC().Format(time.RFC3339))
	}
	if r.Backoff != nil {
		fmt.Fprintf(w, "backoff:  restart %d in %d ms\n", r.Backoff.Restart, r.Backoff.RemainingMS)
	}
	for _, p := range r.Processes {
		fmt.Fprintf(w, "process:  pid %d (group %d)\n", p.PID, p.PGID)
	}
	printGroups(w, r.Loops, r.ForEach)
	printActive(w, r)
	// One line per node that called an engine, in show's words ("in 2 ·
	// out 1"): a run of many nodes prints them from one buffer.
	var line []byte
	for _, u := range r.Usage {
		line = append(append(append(line[:0], "usage:    "...), u.Node...), ' ')
		switch c := u.Usage.(type) {
		case watchdog.UsageCounters:
			// The words show prints (stream.UsageText): one formatter.
			line = append(line, stream.UsageText(&plugin.Usage{Known: true, Input: c.Input, Output: c.Output,
				CacheRead: c.CacheRead, CacheCreation: c.CacheCreation})...)
		case string:
			line = append(line, c...) // "unknown", a word, not JSON
		default:
			b, _ := json.Marshal(u.Usage)
			line = append(line, b...)
		}
		line = append(line, '\n')
		_, _ = w.Write(line)
	}
	if r.UsageTotals != nil {
		fmt.Fprintf(w, "tokens:   %s\n", usageLine(r.UsageTotals))
	}
	printConfinement(w, r.Confinement)
}

// printActive prints the positions r names active, or for an interrupted
// run since when nothing carried it on and the positions it left started.
func printActive(w io.Writer, r *watchdog.Report) {
	if r.InterruptedAt == nil {
		for _, a := range r.Active {
			if a.CutOff {
				// A paused run: nothing carries it on.
				fmt.Fprintf(w, "cut off:  %s after %d ms, when the run stopped (usage %s)\n", a.Position, a.ElapsedMS, a.Usage)
				continue
			}
			fmt.Fprintf(w, "active:   %s for %d ms (usage %s)\n", a.Position, a.ElapsedMS, a.Usage)
		}
		return
	}
	// An interrupted run claims no activity: nothing carried it on
	// since its last event. When its started positions were cut off is
	// not recorded, only that they had run that long by its last event.
	fmt.Fprintf(w, "since:    %s (its last recorded event; nothing has carried the run on since)\n", r.InterruptedAt.UTC().Format(time.RFC3339))
	for _, a := range r.Active {
		fmt.Fprintf(w, "cut off:  %s, started %d ms before the run's last recorded event (usage %s)\n", a.Position, a.ElapsedMS, a.Usage)
	}
}

// printConfinement prints the kernel's confinement and each plugin's, as
// status, show and plugin describe do.
func printConfinement(w io.Writer, c *watchdog.ConfinementReport) {
	if c == nil {
		return
	}
	fmt.Fprintf(w, "confinement: %s\n", c.Kernel)
	for _, p := range c.Plugins {
		fmt.Fprintf(w, "  plugin %s:\n", p.Plugin)
		for _, l := range p.Lines() {
			fmt.Fprintf(w, "    %s\n", l)
		}
	}
}

// exitLine is a recorded worker crash as a person reads it: the cause
// the worker reported, or how its process ended.
func exitLine(x *watchdog.ExitReport) string {
	return "worker " + runstate.Exit{ExitCode: x.ExitCode, Signal: x.Signal, Code: x.Code, Message: x.Message}.Cause()
}
