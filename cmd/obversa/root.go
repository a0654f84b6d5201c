package main

import (
	"errors"
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

// exitError carries an exit status through cobra; its message (if any) is
// printed to stderr.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

func usageErr(err error) error  { return &exitError{code: exitUsage, err: err} }
func failedErr(err error) error { return &exitError{code: exitFailed, err: err} }

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
	}
	root.PersistentFlags().StringVar(&g.storage, "storage", ".obversa", "storage directory holding stored runs")
	root.PersistentFlags().StringVar(&g.namespace, "namespace", "default", "namespace of stored runs")
	root.AddCommand(newRunCmd(g), newWorkerCmd(), newStatusCmd(g), newEventsCmd(g), newValidateCmd(),
		newVerifyCmd(g), newPluginCmd(), newStopCmd(g), newResumeCmd(g), newApproveCmd(g), newPreflightCmd(g))
	return root
}

func execute(args []string) int {
	root := newRoot()
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return exitComplete
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintln(os.Stderr, "Error:", ee.err)
		}
		return ee.code
	}
	// cobra's own errors: unknown command or flag, wrong arg count.
	fmt.Fprintln(os.Stderr, "Error:", err)
	return exitUsage
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
		return "", usageErr(fmt.Errorf("no run %q under %s (namespace %q); pass the run directory printed by `obversa run`, or --storage", arg, g.storage, g.namespace))
	}
	return dir, nil
}
