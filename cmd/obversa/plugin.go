package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/obversa/obversa/hcl"
	"github.com/obversa/obversa/host/watchdog"
	"github.com/obversa/obversa/plugin"
)

func newPluginCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "plugin",
		Short: "Work with plugin binaries: hash, lock",
	}
	cmd.AddCommand(newPluginHashCmd(), newPluginLockCmd())
	return cmd
}

func newPluginHashCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "hash BIN",
		Short: "Print a plugin binary's SHA-256 (the value for `sha256 = …`)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sum, err := plugin.FileSHA256(args[0])
			if err != nil {
				return usageErr(err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s  %s\n", sum, args[0])
			return nil
		},
	}
}

func newPluginLockCmd() *cobra.Command {
	var upgrade bool
	cmd := &cobra.Command{
		Use:   "lock [--upgrade] FILE",
		Short: "Pin every plugin of a run file in obversa.lock.hcl beside it",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			rf, diags := hcl.DecodeFile(args[0])
			if diags.HasErrors() {
				_ = hcl.WriteDiagnostics(os.Stderr, diags, nil, 100)
				return &exitError{code: exitUsage}
			}
			path := hcl.LockFilePath(args[0])
			lf, diags := hcl.DecodeLockFile(path)
			if diags.HasErrors() {
				_ = hcl.WriteDiagnostics(os.Stderr, diags, nil, 100)
				return &exitError{code: exitUsage}
			}
			w := cmd.OutOrStdout()
			for _, pl := range rf.Plugins {
				sum, err := plugin.FileSHA256(pl.Path)
				if err != nil {
					return usageErr(fmt.Errorf("%w: plugin %q: %v", watchdog.ErrPluginMissing, pl.Name, err))
				}
				if pl.SHA256 != "" && pl.SHA256 != sum {
					return usageErr(&plugin.DigestMismatchError{Name: pl.Name, Path: pl.Path, Expected: pl.SHA256, Actual: sum})
				}
				old, ok := lf.Lookup(pl.Name)
				switch {
				case ok && old.SHA256 == sum:
					fmt.Fprintf(w, "%-16s %s (unchanged)\n", pl.Name, sum)
					continue
				case ok && !upgrade:
					return usageErr(fmt.Errorf("plugin %q: %s has sha256 %s, %s pins %s; pass --upgrade to accept the new binary",
						pl.Name, pl.Path, sum, path, old.SHA256))
				}
				lf.Set(hcl.LockedPlugin{Name: pl.Name, Path: pl.Path, SHA256: sum})
				fmt.Fprintf(w, "%-16s %s\n", pl.Name, sum)
			}
			if err := os.WriteFile(path, hcl.EncodeLockFile(lf), 0o644); err != nil {
				return failedErr(err)
			}
			fmt.Fprintf(w, "wrote %s\n", path)
			return nil
		},
	}
	cmd.Flags().BoolVar(&upgrade, "upgrade", false, "accept new digests for plugins already pinned")
	return cmd
}
