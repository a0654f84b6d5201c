package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/obversa/obversa/hcl"
)

func newValidateCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "validate FILE",
		Short: "Check a run file and print its diagnostics with file:line:col",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			rf, diags := hcl.DecodeFile(args[0])
			if len(diags) > 0 {
				_ = hcl.WriteDiagnostics(os.Stderr, diags, nil, 100)
			}
			if diags.HasErrors() {
				return &exitError{code: exitUsage}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s is valid: plugins %d, lanes %d, nodes %d\n", args[0], len(rf.Plugins), len(rf.Lanes), len(rf.Graph.Nodes))
			return nil
		},
	}
}
