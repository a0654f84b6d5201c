package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/spf13/cobra"

	"github.com/obversa/obversa/sdk/conformance"
)

func newPluginConformanceCmd() *cobra.Command {
	var (
		configFile string
		asJSON     bool
		only       []string
		verbose    bool
		timeout    time.Duration
	)
	cmd := &cobra.Command{
		Use:   "conformance [--config FILE] [--json] [--case NAME]... [--timeout D] BIN",
		Short: "Check that a plugin binary follows the plugin protocol",
		Long: `Launches BIN exactly as a run would (pinned by its SHA-256, go-plugin
handshake, automatic mTLS, the host's environment allow-list) and runs the
conformance cases against it, one plugin process per case. Prints a table:
case, result, what was expected, what was seen. Exits 0 when no case failed,
1 when one did, 2 when the check could not start. --timeout bounds the whole
check (default 5m): once it passes, the case under way and every case after
it fail, saying so, so that a plugin that hangs is reported in minutes.

FILE is a JSON conformance file (see sdk/conformance.Options and
docs/writing-plugins.md): the plugin's type, args, env and config, an
invalid config, the target identity, and scenario requests for plugins
without the Conformance service. "{config_dir}" in its strings is the
file's directory.

Cases: ` + strings.Join(conformance.CaseNames(), ", ") + `.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var opts conformance.Options
			if configFile != "" {
				var err error
				if opts, err = conformance.LoadOptions(configFile); err != nil {
					return usageErr(err)
				}
			}
			opts.Only = only
			opts.Timeout = timeout
			if verbose {
				opts.Logger = hclog.New(&hclog.LoggerOptions{Output: cmd.ErrOrStderr(), Level: hclog.Debug})
			}
			rep, err := conformance.Check(cmd.Context(), args[0], opts)
			if err != nil {
				return usageErr(err)
			}
			w := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(w)
				enc.SetIndent("", "  ")
				err = enc.Encode(rep)
			} else {
				err = rep.WriteTable(w)
			}
			if err != nil {
				return failedErr(fmt.Errorf("writing the report: %w", err))
			}
			if rep.Failed() {
				return &exitError{code: exitFailed}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&configFile, "config", "", "JSON conformance file: the plugin's config, args, env, target and scenario requests")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	cmd.Flags().StringArrayVar(&only, "case", nil, "run only this case (repeatable); the others are reported as skipped")
	positiveDurationVar(cmd.Flags(), &timeout, "timeout", conformance.DefaultTimeout, "the bound of the whole check", "bound of the whole check; the cases left when it passes fail")
	cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "log the plugin's stderr and go-plugin's messages to stderr")
	return cmd
}
