package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/obversa/obversa/host/watchdog"
)

func newStatusCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status [--json] RUN",
		Short: "Show a stored run's phase, worker, active occurrences and usage (read-only)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := g.runDir(args[0])
			if err != nil {
				return err
			}
			r, err := watchdog.Status(cmd.Context(), dir)
			if err != nil {
				return failedErr(err)
			}
			if asJSON {
				b, _ := json.MarshalIndent(r, "", "  ")
				fmt.Fprintln(cmd.OutOrStdout(), string(b))
				return nil
			}
			printStatus(cmd.OutOrStdout(), r)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	return cmd
}

func printStatus(w io.Writer, r *watchdog.Report) {
	fmt.Fprintf(w, "run:      %s\nphase:    %s\nevents:   %d\nelapsed:  %d ms\n", r.RunID, r.Phase, r.Events, r.ElapsedMS)
	if r.Worker != nil {
		fmt.Fprintf(w, "worker:   pid %d (alive: %v), restarts %d\n", r.Worker.PID, r.Worker.Alive, r.RestartCount)
	}
	if r.Result != nil {
		fmt.Fprintf(w, "result:   %s\n", summary(r.Result))
	}
	for _, p := range r.PauseReasons {
		fmt.Fprintf(w, "waiting:  %s (%s)\n", p.Position, p.Kind)
	}
	for _, a := range r.Active {
		fmt.Fprintf(w, "active:   %s for %d ms (usage %s)\n", a.Position, a.ElapsedMS, a.Usage)
	}
	for _, u := range r.Usage {
		b, _ := json.Marshal(u.Usage)
		fmt.Fprintf(w, "usage:    %s %s\n", u.Node, b)
	}
}
