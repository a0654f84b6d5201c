package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/spf13/cobra"

	"github.com/obversa/obversa/hcl"
	"github.com/obversa/obversa/host/launch"
	"github.com/obversa/obversa/host/watchdog"
	"github.com/obversa/obversa/internal/shellquote"
)

// lockedJSON is one plugin of plugin lock's --json result.
type lockedJSON struct {
	Name      string `json:"name"`
	Path      string `json:"path"`
	SHA256    string `json:"sha256"`
	KeyID     string `json:"key_id,omitempty"`
	Signature string `json:"signature,omitempty"`
	// Changed is false when the lock file already held this entry.
	Changed bool `json:"changed"`
}

// lockResult is the --json result of plugin lock.
type lockResult struct {
	LockFile string `json:"lock_file"`
	// Written is false when the lock file already held what lock would
	// write, so it was left as it was.
	Written bool         `json:"written"`
	Plugins []lockedJSON `json:"plugins"`
}

func newPluginLockCmd() *cobra.Command {
	var upgrade, asJSON bool
	cmd := &cobra.Command{
		Use:   "lock [--upgrade] [--json] FILE",
		Short: "Pin every plugin of a run file (digest, and signature where trusted_keys apply) in obversa.lock.hcl beside it",
		Long: `lock hashes every plugin binary of the run file and records its SHA-256 in
obversa.lock.hcl beside the run file. Where trusted_keys apply, the binary's
signature (BIN.minisig) must verify with one of them and name this
platform, and its key id and digest are recorded too. A path that is not
a regular file (a device, a named pipe) is refused without reading it. A plugin already pinned to another digest is
refused unless --upgrade is given. Nothing is written if any plugin fails, nor
when the lock file already holds every pin (it says it is current).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			rf, diags := hcl.DecodeFile(args[0])
			if diags.HasErrors() {
				return diagsErr(diags)
			}
			if fd := hcl.CheckPluginFiles(rf); fd.HasErrors() {
				return diagsErr(fd)
			}
			path := hcl.LockFilePath(args[0])
			lf, diags := hcl.DecodeLockFile(path)
			if diags.HasErrors() {
				return diagsErr(diags)
			}
			w := cmd.OutOrStdout()
			if asJSON {
				w = io.Discard
			}
			res := lockResult{LockFile: path, Plugins: []lockedJSON{}}
			for i := range rf.Plugins {
				locked, err := lockPlugin(w, rf, &rf.Plugins[i], lf, lockTarget{runFile: args[0], lockFile: path, upgrade: upgrade})
				if err != nil {
					return err
				}
				res.Plugins = append(res.Plugins, locked)
			}
			written, err := watchdog.WriteLockFile(path, lf)
			if err != nil {
				return failedErr(err)
			}
			res.Written = written
			if written {
				fmt.Fprintf(w, "wrote %s\n", path)
			} else {
				fmt.Fprintf(w, "%s is current; nothing was written\n", path)
			}
			if asJSON {
				writeJSON(cmd.OutOrStdout(), res)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&upgrade, "upgrade", false, "accept new digests for plugins already pinned")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the lock file's path and every pinned plugin as one JSON object")
	return cmd
}

// lockTarget is what lockPlugin pins into: the run file named on the
// command line, its lock file's path, and whether --upgrade was given.
type lockTarget struct {
	runFile, lockFile string
	upgrade           bool
}

// lockPlugin checks plugin pl of run file rf (its digest, and its
// signature where trusted_keys apply), sets its pin in lf unless lf holds
// it already, prints its line to w and returns its JSON. It returns a
// usage error when the binary is missing or refused, and
// PLUGIN_DIGEST_MISMATCH when lf pins another digest and t.upgrade is
// false.
func lockPlugin(w io.Writer, rf *hcl.RunFile, pl *hcl.Plugin, lf *hcl.LockFile, t lockTarget) (lockedJSON, error) {
	keys, err := launch.TrustedKeys(rf, pl)
	if err != nil {
		return lockedJSON{}, usageErr(err)
	}
	src, err := launch.CheckSource(pl.Name, pl.Path, pl.SHA256, keys, "")
	if errors.Is(err, fs.ErrNotExist) {
		return lockedJSON{}, usageErr(fmt.Errorf("%w: plugin %q: %s does not exist; build it or fix `path` in %s", watchdog.ErrPluginMissing, pl.Name, pl.Path, t.runFile))
	}
	if err != nil {
		return lockedJSON{}, usageErr(err)
	}
	entry := hcl.LockedPlugin{Name: pl.Name, Path: pl.LockPath(), SHA256: src.SHA256}
	signed := ""
	if v := src.Verified; v != nil {
		entry.KeyID, entry.Signature = v.KeyID, v.Signature
		signed = fmt.Sprintf(" signed by %s (%s %s)", v.KeyID, v.Statement.Name, v.Statement.Version)
	}
	old, ok := lf.Lookup(pl.Name)
	locked := lockedJSON{Name: entry.Name, Path: entry.Path, SHA256: entry.SHA256,
		KeyID: entry.KeyID, Signature: entry.Signature, Changed: !ok || old != entry}
	switch {
	case ok && old == entry:
		fmt.Fprintf(w, "%-16s %s%s (unchanged)\n", pl.Name, src.SHA256, signed)
		return locked, nil
	case ok && old.SHA256 != entry.SHA256 && !t.upgrade:
		return lockedJSON{}, &exitError{code: exitUsage, reason: "PLUGIN_DIGEST_MISMATCH",
			err: fmt.Errorf("plugin %q: %s has sha256 %s, %s pins %s; if the new binary is trusted, run `obversa plugin lock --upgrade %s`",
				pl.Name, pl.Path, src.SHA256, t.lockFile, old.SHA256, shellquote.Quote(t.runFile))}
	}
	lf.Set(entry)
	fmt.Fprintf(w, "%-16s %s%s\n", pl.Name, src.SHA256, signed)
	return locked, nil
}
