package main

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/obversa/obversa/host/watchdog"
)

func newKeeperCmd() *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:    "keeper --run-dir DIR",
		Short:  "Stop what is left of a run once its watchdog and worker are gone (started by the watchdog)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := watchdog.Keep(cmd.Context(), dir, os.Stdin); err != nil {
				return failedErr(err)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "run-dir", "", "run directory")
	_ = cmd.MarkFlagRequired("run-dir")
	return cmd
}
