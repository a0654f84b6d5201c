package main

import (
	"fmt"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/obversa/obversa/store"
)

func newStopCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "stop RUN",
		Short: "Ask the watchdog holding a run to stop it cleanly (STOPPED)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := g.runDir(args[0])
			if err != nil {
				return err
			}
			h, ok, err := store.ReadHolder(dir)
			if err != nil {
				return failedErr(err)
			}
			if !ok || !store.HolderAlive(h) {
				return usageErr(fmt.Errorf("no live watchdog holds %s", dir))
			}
			if err := syscall.Kill(h.PID, syscall.SIGTERM); err != nil {
				return failedErr(fmt.Errorf("signalling watchdog pid %d: %w", h.PID, err))
			}
			fmt.Fprintf(cmd.OutOrStdout(), "asked watchdog pid %d on %s to stop the run\n", h.PID, h.Host)
			return nil
		},
	}
}
