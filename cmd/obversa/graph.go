package main

import (
	"github.com/spf13/cobra"

	"github.com/obversa/obversa/hcl"
	"github.com/obversa/obversa/host/diagram"
	"github.com/obversa/obversa/host/plan"
)

func newGraphCmd() *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "graph [--format mermaid|dot] FILE",
		Short: "Draw a run file's graph as Mermaid or Graphviz DOT",
		Long: `graph prints the graph of a run file: one box per node with its kind and its
lane or binding, one arrow per depends_on entry (from the dependency to the
node that waits for it), optional nodes rounded or dashed, finalizers with a
double border. Nothing is run and no plugin is launched.

  obversa graph run.hcl > graph.mmd            # Mermaid: paste into Markdown or mermaid.live
  obversa graph --format dot run.hcl | dot -Tsvg > graph.svg`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := diagram.ParseFormat(format)
			if err != nil {
				return usageErr(err)
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
