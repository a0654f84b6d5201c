package main

import (
	"fmt"
	"os"
	"runtime/pprof"

	"github.com/spf13/cobra"

	"github.com/obversa/obversa/host/watchdog"
)

// cpuProfileEnv names a file the worker writes a CPU profile to, for
// looking into `make bench` numbers.
const cpuProfileEnv = "OBVERSA_WORKER_CPUPROFILE"

func newWorkerCmd(g *globals) *cobra.Command {
	var dir, id string
	var restart int
	cmd := &cobra.Command{
		Use:    "worker --run-dir DIR | --storage URL --run-id ID",
		Short:  "Run a stored run's executor (started by the watchdog)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if path := os.Getenv(cpuProfileEnv); path != "" {
				f, err := os.Create(path)
				if err != nil {
					return failedErr(fmt.Errorf("%s: %w", cpuProfileEnv, err))
				}
				defer f.Close()
				if err := pprof.StartCPUProfile(f); err != nil {
					return failedErr(err)
				}
				defer pprof.StopCPUProfile()
			}
			ref, err := g.childRun(dir, id)
			if err != nil {
				return err
			}
			defer ref.Close()
			if _, err := watchdog.Work(cmd.Context(), ref, restart, os.Stdin); err != nil {
				return failedErr(err)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "run-dir", "", "run directory (file backend)")
	cmd.Flags().StringVar(&id, "run-id", "", "run id (in the database --storage names)")
	cmd.Flags().IntVar(&restart, "restart", 0, "how many workers the watchdog started before this one")
	return cmd
}
