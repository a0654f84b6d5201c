package main

import (
	"fmt"
	"io"
	"slices"

	"github.com/spf13/cobra"

	"github.com/obversa/obversa/host/runstate"
	"github.com/obversa/obversa/host/runview"
)

// phases are the phases `runs --phase` accepts.
var phases = runview.Phases

func newRunsCmd(g *globals) *cobra.Command {
	var asJSON bool
	var phase []string
	cmd := &cobra.Command{
		Use:   "runs [--storage DIR] [--phase PHASE] [--json]",
		Short: "List the runs of a storage directory or database, newest first",
		Long: `runs lists the runs of a storage directory (--storage, default .obversa; a run
file's storage block says where its runs are, beside the run file by default) and
namespace: id, phase, start, elapsed time, nodes done of total, usage. --phase keeps
the runs in that phase (repeat it or separate phases by commas): ` + fmt.Sprint(phases) + `.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := runview.CheckPhases(phase, func(p string) string { return "--phase " + echoArg(p) }); err != nil {
				return usageErr(err)
			}
			var keep func(runview.Summary) bool
			if len(phase) > 0 {
				keep = func(s runview.Summary) bool { return slices.Contains(phase, s.Phase) }
			}
			list, broken, err := g.listRuns(cmd.Context(), keep)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if asJSON {
				for _, s := range list {
					writeJSON(w, s)
				}
				for _, b := range broken {
					writeJSON(w, b)
				}
				return nil
			}
			printRuns(w, list)
			for _, b := range broken {
				fmt.Fprintf(cmd.ErrOrStderr(), "warning: run %s cannot be read: %s\n", b.RunID, b.Error)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object per run")
	cmd.Flags().StringSliceVar(&phase, "phase", nil, "only runs in this phase")
	return cmd
}

func printRuns(w io.Writer, list []runview.Summary) {
	if len(list) == 0 {
		fmt.Fprintln(w, "no runs")
		return
	}
	idw := len("RUN")
	for _, s := range list {
		idw = max(idw, len(s.RunID))
	}
	fmt.Fprintf(w, "%-*s  %-11s  %-19s  %8s  %7s  %s\n", idw, "RUN", "PHASE", "STARTED", "ELAPSED", "NODES", "USAGE")
	for _, s := range list {
		phase := s.Phase
		if s.Code != "" && s.Phase != string(runstate.PhaseCompleted) {
			phase += " " + s.Code
		}
		fmt.Fprintf(w, "%-*s  %-11s  %-19s  %8s  %7s  %s\n", idw, s.RunID, phase, s.StartedAt.Local().Format("2006-01-02 15:04:05"),
			duration(s.ElapsedMS), fmt.Sprintf("%d/%d", s.Nodes.Done, s.Nodes.Total), s.Usage)
	}
}
