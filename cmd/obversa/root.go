package main

import (
	"fmt"
	"os"

	"github.com/obversa/obversa/internal/idname"
	"github.com/obversa/obversa/store"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Exit statuses (docs/cli.md#output-and-exit-status).
const (
	exitComplete = 0
	exitFailed   = 1
	exitUsage    = 2
	exitPaused   = 3
)

// globals are the persistent flags.
type globals struct {
	storageFlag string // --storage; read through storage()
	namespace   string
	flags       *pflag.FlagSet // the persistent flags, to tell a default from a choice
	// raw is --raw: print what runs produced byte for byte, control
	// sequences included (termsafe.go).
	raw bool
	// json is whether the command being run prints --json: its stdout is
	// escaped with --raw too (termsafe.go).
	json bool
}

// defaultNamespace is --namespace's default.
const defaultNamespace = "default"

func newRoot() *cobra.Command {
	root, _ := newRootGlobals()
	return root
}

// newRootGlobals returns the root command and the globals its persistent
// flags set.
func newRootGlobals() (*cobra.Command, *globals) {
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
	root.PersistentFlags().StringVar(&g.storageFlag, "storage", defaultStorage,
		"where runs are kept: a storage directory, or a PostgreSQL database (postgres://…, no password; default $"+storageURLEnv+" when set)")
	root.PersistentFlags().StringVar(&g.namespace, "namespace", defaultNamespace, "namespace of stored runs")
	root.PersistentFlags().BoolVar(&g.raw, "raw", false,
		"print what runs produced (engine text, command output, plugin messages) byte for byte, terminal control sequences included; without it they are shown escaped (\\u001b), on a terminal and on a pipe or file alike")
	g.flags = root.PersistentFlags()
	// No subcommand has a persistent pre-run of its own, so this one runs
	// for every command, before it prints anything.
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		g.json = jsonFlag(cmd)
		// A namespace is a directory name and a database key: one that
		// is not an id is the operator's mistake (exit 2), refused before
		// any storage is opened, whichever command was given.
		if err := store.ValidID(g.namespace); err != nil {
			return usageErr(fmt.Errorf("--namespace: %w; for example --namespace %s", err, idname.Suggest(g.namespace, "default")))
		}
		return nil
	}
	root.AddCommand(newRunCmd(g), newWorkerCmd(g), newKeeperCmd(g), newStatusCmd(g), newEventsCmd(g), newValidateCmd(),
		newVerifyCmd(g), newPluginCmd(), newStopCmd(g), newResumeCmd(g), newApproveCmd(g), newPreflightCmd(g),
		newVersionCmd(), newGraphCmd(g), newLogsCmd(g), newRunsCmd(g), newShowCmd(g), newUICmd(g))
	withUsageOnArgs(root)
	root.SetFlagErrorFunc(boundFlagError)
	return root, g
}

// withUsageOnArgs makes every command's refusal of its arguments (cobra's
// "accepts 1 arg(s), received 0") say how the command is called.
func withUsageOnArgs(c *cobra.Command) {
	if check := c.Args; check != nil {
		c.Args = func(cmd *cobra.Command, args []string) error {
			if err := check(cmd, args); err != nil {
				return fmt.Errorf("%w; usage: %s (see %s --help)", err, cmd.UseLine(), cmd.CommandPath())
			}
			return nil
		}
	}
	for _, sub := range c.Commands() {
		withUsageOnArgs(sub)
	}
}

func execute(args []string) int {
	root, g := newRootGlobals()
	root.SetArgs(args)
	stdout, stderr := escaping(os.Stdout, &g.raw, &g.json), escaping(os.Stderr, &g.raw, nil)
	defer stderr.flush()
	defer stdout.flush()
	root.SetOut(stdout)
	root.SetErr(stderr)
	cmd, err := root.ExecuteC()
	if err == nil {
		return exitComplete
	}
	if cmd == root {
		err = boundUnknownCommand(err)
	}
	g.json = wantsJSON(cmd, args)
	return printFailure(stdout, stderr, err, g.json)
}
