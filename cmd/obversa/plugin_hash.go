package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/obversa/obversa/plugin"
)

// hashed is the --json result of plugin hash.
type hashed struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
}

func newPluginHashCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "hash [--json] BIN",
		Short: "Print a plugin binary's SHA-256 (the value for `sha256 = …`)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := nonEmptyPath(args[0], "the plugin binary", "obversa plugin hash ./bin/mock-engine"); err != nil {
				return err
			}
			sum, err := plugin.FileSHA256(args[0])
			if err != nil {
				return usageErr(err)
			}
			if asJSON {
				writeJSON(cmd.OutOrStdout(), hashed{Path: args[0], SHA256: sum})
				return nil
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s  %s\n", sum, args[0])
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print {path, sha256} as one JSON object")
	return cmd
}

// nonEmptyPath refuses an empty path argument as a usage error that says
// whose path it is and gives an example of the command, instead of the
// system's error for a file with no name ("stat : no such file or
// directory").
func nonEmptyPath(arg, what, example string) error {
	if arg != "" {
		return nil
	}
	return usageErr(fmt.Errorf(`%s's path is empty (""); name it, for example %s`, what, example))
}
