package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"

	"github.com/spf13/cobra"

	"github.com/obversa/obversa/host/executor"
	"github.com/obversa/obversa/host/runstate"
	"github.com/obversa/obversa/host/watchdog"
	"github.com/obversa/obversa/store"
)

func newPreflightCmd(g *globals) *cobra.Command {
	var asJSON bool
	show := func(cmd *cobra.Command, args []string) error {
		ref, err := g.findRun(cmd.Context(), args[0])
		if err != nil {
			return err
		}
		defer ref.Close()
		r, err := watchdog.Status(cmd.Context(), ref)
		if err != nil {
			return failedErr(err)
		}
		if asJSON {
			writeJSON(cmd.OutOrStdout(), r.Preflight)
			return nil
		}
		printPreflight(cmd.OutOrStdout(), r, ref.Shell())
		return nil
	}
	cmd := &cobra.Command{
		Use:   "preflight [--json] RUN",
		Short: "Show a stored run's preflight phase, or close a probe a crash left open",
		Long: `Preflight checks every lane's engine before a run dispatches anything: the binary's
digest, the plugin's health, a static Admit and, where the lane asks, one live call.

  obversa preflight RUN            the phase (disabled, pending, admitted, paused, failed),
                                   the open probe if any, and the probes' usage
  obversa preflight interrupt RUN  close a probe a crash left open as interrupted and record
                                   a preflight pause; prints the pause's event id for
                                   ` + "`obversa resume --preflight ID RUN`",
		Args: cobra.ExactArgs(1),
		RunE: show,
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the preflight report as one JSON object")
	status := &cobra.Command{
		Use:   "status [--json] RUN",
		Short: "Show a stored run's preflight phase (read-only)",
		Args:  cobra.ExactArgs(1),
		RunE:  show,
	}
	status.Flags().BoolVar(&asJSON, "json", false, "print the preflight report as one JSON object")
	var interruptJSON bool
	interrupt := &cobra.Command{
		Use:   "interrupt [--json] RUN",
		Short: "Close a preflight probe a crash left open as interrupted and record a preflight pause",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ref, err := g.findRun(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			defer ref.Close()
			id, already, err := watchdog.InterruptPreflight(cmd.Context(), ref)
			switch {
			case errors.Is(err, executor.ErrNothingToInterrupt):
				return usageErr(err)
			case errors.Is(err, store.ErrProcessLocked):
				return lockedRefusal(cmd.Context(), ref, err, "; interrupt only a run nothing runs")
			case errors.Is(err, store.ErrRevisionConflict):
				return failedErr(fmt.Errorf("%w; the record changed while the probe was being closed: look again with `obversa preflight %s`", err, ref.Shell()))
			case err != nil:
				return writeErr(err)
			}
			if interruptJSON {
				writeJSON(cmd.OutOrStdout(), interruptObject{PreflightEventID: id, Already: already, Dir: ref.String()})
				return nil
			}
			fmt.Fprintln(cmd.OutOrStdout(), id)
			if already {
				fmt.Fprintf(cmd.ErrOrStderr(), "the probe was already closed by an interrupt; nothing was changed\n")
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "carry the run on with `obversa resume --preflight %s %s`\n", id, ref.Shell())
			return nil
		},
	}
	interrupt.Flags().BoolVar(&interruptJSON, "json", false, "print {preflight_event_id, already, dir} as one JSON object")
	cmd.AddCommand(status, interrupt)
	return cmd
}

// interruptObject is what `preflight interrupt --json` prints: the
// preflight pause to resume with `obversa resume --preflight ID DIR`, and
// whether an earlier interrupt had recorded it already.
type interruptObject struct {
	PreflightEventID string `json:"preflight_event_id"`
	Already          bool   `json:"already"`
	Dir              string `json:"dir"`
}

// printPreflight is the human form of the preflight report.
func printPreflight(w io.Writer, r *watchdog.Report, name string) {
	p := r.Preflight
	fmt.Fprintf(w, "run:        %s\n", r.RunID)
	if p == nil {
		fmt.Fprintln(w, "preflight:  unknown (the record has no graph:run-started)")
		return
	}
	fmt.Fprintf(w, "preflight:  %s\n", p.Phase)
	fmt.Fprintf(w, "probes:     %d started, %d finished\n", p.Probes, p.Finished)
	if o := p.OpenProbe; o != nil {
		fmt.Fprintf(w, "open probe: %s (%s check of lane %q, target %s), left open by a crash\n", o.ProbeID, o.Check, o.Lane, runstate.TargetName(o.Target))
		fmt.Fprintf(w, "next:       obversa preflight interrupt %s\n", name)
	}
	if p.PauseEventID != "" {
		fmt.Fprintf(w, "paused:     %s (%s)\n", p.PauseEventID, p.PauseReason)
		if p.OpenProbe == nil {
			fmt.Fprintf(w, "next:       obversa resume --preflight %s %s\n", p.PauseEventID, name)
		}
	}
	lanes := make([]string, 0, len(p.Admitted))
	for l := range p.Admitted {
		lanes = append(lanes, l)
	}
	sort.Strings(lanes)
	for _, l := range lanes {
		a := p.Admitted[l]
		live := "live skipped"
		switch {
		case a.LiveReused:
			live = "live receipt " + a.LiveProbe + " reused"
		case a.LiveProbe != "":
			live = "live " + a.LiveProbe
		}
		fmt.Fprintf(w, "admitted:   %s → %s (static %s, %s)\n", l, runstate.TargetName(a.Target), a.Static, live)
	}
	for _, b := range p.Blocked {
		fmt.Fprintf(w, "blocked:    %s %s: %s\n", b.Lane, runstate.TargetName(b.Target), b.Reason)
	}
	if p.Failed != nil {
		fmt.Fprintf(w, "failed:     %s\n", p.Failed.Message)
	}
	if p.Usage != nil {
		b, _ := json.Marshal(p.Usage)
		fmt.Fprintf(w, "usage:      %s (preflight probes only)\n", b)
	}
}

// preflightHint explains a preflight pause or a refused start in the
// human form of a result.
func preflightHint(w io.Writer, res *runstate.Result, name string) {
	if res == nil || res.Output == nil || (res.Code != runstate.CodePreflightPaused && res.Code != runstate.CodeProtocol) {
		return
	}
	if m := res.Output.Message; m != "" {
		fmt.Fprintf(w, "%s: %s\n", res.Code, m)
	}
	if id := res.Output.PreflightEventID; id != "" {
		fmt.Fprintf(w, "carry it on with `obversa resume --preflight %s %s`\n", id, name)
	}
}
