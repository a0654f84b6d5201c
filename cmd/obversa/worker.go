package main

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/obversa/obversa/host/watchdog"
)

func newWorkerCmd() *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:    "worker --run-dir DIR",
		Short:  "Run a stored run's executor (started by the watchdog)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			res, err := watchdog.Work(cmd.Context(), dir, os.Stdin)
			if err != nil {
				return failedErr(err)
			}
			_ = res
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "run-dir", "", "run directory")
	_ = cmd.MarkFlagRequired("run-dir")
	return cmd
}
