package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/obversa/obversa/plugin"
)

func newPluginHashCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "hash BIN",
		Short: "Print a plugin binary's SHA-256 (the value for `sha256 = …`)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sum, err := plugin.FileSHA256(args[0])
			if err != nil {
				return usageErr(err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s  %s\n", sum, args[0])
			return nil
		},
	}
}
