package main

import (
	"fmt"
	"io"
	"slices"

	"github.com/charmbracelet/x/ansi"
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
			for _, c := range printRuns(w, list, len(broken)) {
				fmt.Fprintf(cmd.ErrOrStderr(), "warning: run directory %s holds the record of run %s (a copy of its directory): commands given %s read the copy, given %s the run's own\n",
					termText(c.Dir), termText(c.RunID), termText(c.Name), termText(c.RunID))
			}
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

// printRuns prints list as a table, one run a row under its name
// (runview.Summary.Name: in a storage directory its directory's name),
// which is what commands take as RUN. With no run to list it says so, and
// when unreadable runs (warned about on stderr) were left out, that there
// are runs it could not read rather than none. It returns the runs whose
// name is not their record's run id: copies of a run directory, which
// would otherwise show as a second row of the same id.
func printRuns(w io.Writer, list []runview.Summary, unreadable int) (copies []runview.Summary) {
	switch {
	case len(list) == 0 && unreadable == 1:
		fmt.Fprintln(w, "no runs to list: 1 run cannot be read (see the warning)")
		return nil
	case len(list) == 0 && unreadable > 1:
		fmt.Fprintf(w, "no runs to list: %d runs cannot be read (see the warnings)\n", unreadable)
		return nil
	case len(list) == 0:
		fmt.Fprintln(w, "no runs")
		return nil
	}
	names := make([]string, len(list))
	idw := len("RUN")
	for i, s := range list {
		names[i] = s.Name
		if s.Name != s.RunID {
			copies = append(copies, s)
		}
		names[i] = termText(names[i])
		idw = max(idw, ansi.StringWidth(names[i]))
	}
	fmt.Fprintf(w, "%-*s  %-11s  %-19s  %8s  %7s  %s\n", idw, "RUN", "PHASE", "STARTED", "ELAPSED", "NODES", "USAGE")
	for i, s := range list {
		phase := s.Phase
		if s.Code != "" && s.Phase != string(runstate.PhaseCompleted) {
			phase += " " + s.Code
		}
		fmt.Fprintf(w, "%s  %-11s  %-19s  %8s  %7s  %s\n", padCell(names[i], idw), phase, s.StartedAt.Local().Format("2006-01-02 15:04:05"),
			duration(s.ElapsedMS), fmt.Sprintf("%d/%d", s.Nodes.Done, s.Nodes.Total), s.Usage)
	}
	return copies
}
