package main

import (
	"errors"
	"fmt"
	"os"
	"runtime/pprof"

	"github.com/spf13/cobra"

	"github.com/obversa/obversa/host/watchdog"
)

// cpuProfileEnv names a file the worker writes a CPU profile to, for
// looking into `make bench` numbers.
const cpuProfileEnv = "OBVERSA_WORKER_CPUPROFILE"

// runCPUProfileEnv names a file `obversa run` writes a CPU profile of its
// own process to (the watchdog: the run file, the plugin pins and cache,
// supervision), for looking into the time before the first dispatch.
const runCPUProfileEnv = "OBVERSA_RUN_CPUPROFILE"

// startCPUProfile starts a CPU profile into the file the environment
// variable env names, when it names one; the returned function stops it.
// Errors name the variable.
func startCPUProfile(env string) (stop func(), err error) {
	path := os.Getenv(env)
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", env, err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", env, err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

// workerFirstHeap is the memory (bytes) at which a worker collects
// garbage for the first time (collectLate) when its start-up — the fold
// of a long record — gets that far: the worker collects once when its
// start-up is done, before its executor's first dispatch, and from there
// on at the default pacing (host/watchdog; docs/decisions.md, "The worker
// collects garbage late").
const workerFirstHeap = 64 << 20

func newWorkerCmd(g *globals) *cobra.Command {
	var dir, id string
	var restart int
	cmd := &cobra.Command{
		Use:    "worker --run-dir DIR | --storage URL --run-id ID",
		Short:  "Run a stored run's executor (started by the watchdog)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			collectLate(workerFirstHeap)
			stop, err := startCPUProfile(cpuProfileEnv)
			if err != nil {
				// A profile is a diagnostic: one that cannot be written
				// never crashes the worker (every restart would fail the
				// same way, and the run with RESTART_EXHAUSTED). The
				// warning goes to worker.log.
				fmt.Fprintf(cmd.ErrOrStderr(), "warning: %v; the worker runs without a CPU profile\n", err)
				stop = func() {}
			}
			defer stop()
			ref, err := g.childRun(dir, id)
			if err != nil {
				return err
			}
			defer ref.Close()
			if _, err := watchdog.Work(cmd.Context(), ref, restart, os.Stdin); errors.Is(err, watchdog.ErrNotFromWatchdog) {
				return usageErr(err)
			} else if err != nil {
				return failedErr(err)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "run-dir", "", "run directory (file backend)")
	cmd.Flags().StringVar(&id, "run-id", "", "run id (in the database --storage names)")
	atLeastVar(cmd.Flags(), &restart, "restart", 0, 0, "a count", "how many workers the watchdog started before this one")
	return cmd
}
