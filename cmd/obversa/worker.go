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

func newWorkerCmd() *cobra.Command {
	var dir string
	var restart int
	cmd := &cobra.Command{
		Use:    "worker --run-dir DIR",
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
			if _, err := watchdog.Work(cmd.Context(), dir, restart, os.Stdin); err != nil {
				return failedErr(err)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "run-dir", "", "run directory")
	cmd.Flags().IntVar(&restart, "restart", 0, "how many workers the watchdog started before this one")
	_ = cmd.MarkFlagRequired("run-dir")
	return cmd
}
