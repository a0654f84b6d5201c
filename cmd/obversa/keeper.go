package main

import (
	"errors"
	"os"

	"github.com/spf13/cobra"

	"github.com/obversa/obversa/host/watchdog"
	// A keeper of a directory run waits for its pipe's end in this
	// package's init, before the rest of the program initialises.
	_ "github.com/obversa/obversa/internal/keeperwait"
)

func newKeeperCmd(g *globals) *cobra.Command {
	var dir, id string
	cmd := &cobra.Command{
		Use:    "keeper --run-dir DIR | --storage URL --run-id ID",
		Short:  "Stop what is left of a run once its watchdog and worker are gone (started by the watchdog)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ref, err := g.childRun(dir, id)
			if err != nil {
				return err
			}
			defer ref.Close()
			if _, err := watchdog.Keep(cmd.Context(), ref, os.Stdin); errors.Is(err, watchdog.ErrNotFromWatchdog) {
				return usageErr(err)
			} else if err != nil {
				return failedErr(err)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "run-dir", "", "run directory (file backend)")
	cmd.Flags().StringVar(&id, "run-id", "", "run id (in the database --storage names)")
	return cmd
}
