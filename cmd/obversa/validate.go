package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/obversa/obversa/hcl"
	"github.com/obversa/obversa/host/validate"
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
	var asJSON, plugins bool
	cmd := &cobra.Command{
		Use:   "validate [--plugins] [--json] FILE",
		Short: "Check a run file and print its diagnostics with file:line:col",
		Long: `validate checks everything about a run file that can be checked without
running it, and reports each problem at its place (file:line:col): the
syntax, names and references; the workspace root; that each plugin path is
an executable file; that each plugin is pinned (in the run file or
obversa.lock.hcl) and its binary still has the pinned digest (and, where
trusted_keys apply, a valid signature).

With --plugins it also launches each pinned plugin, as a run would, and
asks it to check its config (Configure); what the plugin rejects is shown
at the config attribute it names. Nothing is written.

Exit status 0 when the run file is valid (warnings may be printed), 2 when
it has errors.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			rf, diags := validate.File(ctx, args[0], validate.Options{Plugins: plugins})
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
	cmd.Flags().BoolVar(&plugins, "plugins", false, "also launch each pinned plugin and check its config with its Configure")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result, or the refusal with its diagnostics, as one JSON object")
	return cmd
}
