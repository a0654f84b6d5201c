package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/obversa/obversa/store"
)

// Exit statuses (DESIGN §8).
const (
	exitComplete = 0
	exitFailed   = 1
	exitUsage    = 2
	exitPaused   = 3
)

// globals are the persistent flags.
type globals struct {
	storage   string
	namespace string
}

func newRoot() *cobra.Command {
	g := &globals{}
	root := &cobra.Command{
		Use:           "obversa",
		Short:         "Run graphs of agent work durably",
		SilenceUsage:  true,
		SilenceErrors: true,
		// --version prints what `obversa version` prints.
		Version: readVersion().String(),
	}
	root.SetVersionTemplate("{{.Version}}")
	root.PersistentFlags().StringVar(&g.storage, "storage", ".obversa", "storage directory holding stored runs")
	root.PersistentFlags().StringVar(&g.namespace, "namespace", "default", "namespace of stored runs")
	root.AddCommand(newRunCmd(g), newWorkerCmd(), newKeeperCmd(), newStatusCmd(g), newEventsCmd(g), newValidateCmd(),
		newVerifyCmd(g), newPluginCmd(), newStopCmd(g), newResumeCmd(g), newApproveCmd(g), newPreflightCmd(g),
		newVersionCmd(), newGraphCmd(g), newLogsCmd(g), newRunsCmd(g), newShowCmd(g))
	return root
}

func execute(args []string) int {
	root := newRoot()
	root.SetArgs(args)
	cmd, err := root.ExecuteC()
	if err == nil {
		return exitComplete
	}
	return printFailure(os.Stdout, os.Stderr, err, wantsJSON(cmd, args))
}

// runDir resolves RUN: the path of a run directory (one holding
// events.jsonl), else a run id under --storage/--namespace.
func (g *globals) runDir(arg string) (string, error) {
	if st, err := os.Stat(filepath.Join(arg, "events.jsonl")); err == nil && !st.IsDir() {
		return arg, nil
	}
	if err := store.ValidID(arg); err != nil {
		return "", usageErr(fmt.Errorf("%q is neither a run directory nor a run id: %w", arg, err))
	}
	st, err := store.Open(g.storage, g.namespace)
	if err != nil {
		return "", failedErr(err)
	}
	dir := st.RunDir(arg)
	if _, err := os.Stat(filepath.Join(dir, "events.jsonl")); err != nil {
		return "", usageErr(fmt.Errorf("%w: no run %q under %s (namespace %q); pass the run directory printed by `obversa run`, or --storage", store.ErrRunNotFound, arg, g.storage, g.namespace))
	}
	return dir, nil
}
