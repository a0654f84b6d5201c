package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/obversa/obversa/hcl"
)

// validated is the --json result of validate.
type validated struct {
	File        string               `json:"file"`
	Valid       bool                 `json:"valid"`
	Plugins     int                  `json:"plugins"`
	Lanes       int                  `json:"lanes"`
	Nodes       int                  `json:"nodes"`
	Diagnostics []hcl.JSONDiagnostic `json:"diagnostics"`
}

func newValidateCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "validate [--json] FILE",
		Short: "Check a run file and print its diagnostics with file:line:col",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			rf, diags := hcl.DecodeFile(args[0])
			if diags.HasErrors() {
				return diagsErr(diags)
			}
			if asJSON {
				writeJSON(cmd.OutOrStdout(), validated{File: args[0], Valid: true, Plugins: len(rf.Plugins), Lanes: len(rf.Lanes),
					Nodes: len(rf.Graph.Nodes), Diagnostics: hcl.DiagnosticsJSON(diags)})
				return nil
			}
			printWarnings(cmd.ErrOrStderr(), diags)
			fmt.Fprintf(cmd.OutOrStdout(), "%s is valid: plugins %d, lanes %d, nodes %d\n", args[0], len(rf.Plugins), len(rf.Lanes), len(rf.Graph.Nodes))
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result, or the refusal with its diagnostics, as one JSON object")
	return cmd
}
