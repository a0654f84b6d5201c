package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/obversa/obversa/hcl"
	"github.com/obversa/obversa/host/diagram"
	"github.com/obversa/obversa/host/plan"
	"github.com/obversa/obversa/host/runview"
)

func newGraphCmd(g *globals) *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "graph [--format mermaid|dot] FILE|RUN",
		Short: "Draw a run file's graph, or a run's with each node coloured by its state, as Mermaid or Graphviz DOT",
		Long: `graph prints the graph of a run file: one box per node with its kind and its
lane or binding, one arrow per depends_on entry (from the dependency to the
node that waits for it), optional nodes rounded or dashed, finalizers with a
double border, a loop as a frame around its members, a for_each node with how
its instances are decided. Nothing is run and no plugin is launched. Given a
RUN (a run directory or id) instead of a file, it draws the graph the run
recorded, each node coloured and labelled by its state in the run (idle,
started, paused, passed, failed, blocked, or skipped: never dispatched
before the run ended).

  obversa graph run.hcl > graph.mmd            # Mermaid: paste into Markdown or mermaid.live
  obversa graph --format dot run.hcl | dot -Tsvg > graph.svg
  obversa graph .obversa/default/runs/RUN-ID     # the run's graph, by state`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := diagram.ParseFormat(format)
			if err != nil {
				return usageErr(err)
			}
			if st, err := os.Stat(args[0]); err != nil || st.IsDir() {
				return drawRun(cmd, g, args[0], f)
			}
			rf, diags := hcl.DecodeFile(args[0])
			if diags.HasErrors() {
				return diagsErr(diags)
			}
			def, err := plan.Definition(rf)
			if err != nil {
				return usageErr(err)
			}
			return diagram.New(def, nil).Write(cmd.OutOrStdout(), f)
		},
	}
	cmd.Flags().StringVar(&format, "format", string(diagram.FormatMermaid), "mermaid or dot")
	return cmd
}

// drawRun draws the graph a run recorded, each node by its state in the
// shared fold.
func drawRun(cmd *cobra.Command, g *globals, arg string, f diagram.Format) error {
	ref, err := g.findRun(cmd.Context(), arg)
	if err != nil {
		return usageErr(fmt.Errorf("%s is neither a run file nor a run: %w", echoArg(arg), errors.Unwrap(err)))
	}
	defer ref.Close()
	st, held, err := foldRun(cmd.Context(), ref)
	if err != nil {
		return err
	}
	d := diagram.New(st.Start().Definition, nil)
	statuses := runview.Statuses(st, held)
	for i := range d.Nodes {
		d.Nodes[i].Status = statuses[d.Nodes[i].ID]
	}
	for i := range d.Groups {
		// A loop's frame says where the loop stands; its members are
		// coloured by their status in its current round.
		if s, ok := statuses[d.Groups[i].ID]; ok {
			d.Groups[i].Label += " · " + s
		}
	}
	return d.Write(cmd.OutOrStdout(), f)
}
