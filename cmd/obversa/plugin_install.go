package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/obversa/obversa/host/launch"
	"github.com/obversa/obversa/plugin"
)

// pluginsDirEnv overrides the default plugins directory.
const pluginsDirEnv = "OBVERSA_PLUGINS_DIR"

// defaultPluginsDir is $OBVERSA_PLUGINS_DIR, else ~/.obversa/plugins.
// Without a home directory (HOME unset) it is a usage error rather than
// .obversa/plugins under the working directory, which is where a storage
// directory keeps its plugin cache.
func defaultPluginsDir() (string, error) {
	if d := os.Getenv(pluginsDirEnv); d != "" {
		return d, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", usageErr(fmt.Errorf("no plugins directory: %v; pass --dir DIR or set %s", err, pluginsDirEnv))
	}
	return filepath.Join(home, ".obversa", "plugins"), nil
}

// installed is the --json result of plugin install.
type installed struct {
	Name             string   `json:"name"`
	Version          string   `json:"version"`
	Platform         string   `json:"platform"`
	SHA256           string   `json:"sha256"`
	Path             string   `json:"path"`
	KeyID            string   `json:"key_id,omitempty"` // "" when no --key verified the origin
	AlreadyInstalled bool     `json:"already_installed"`
	Ignored          []string `json:"ignored"`
	// Types are the plugin types the binary serves, from Describe; empty
	// when describing it failed.
	Types []string `json:"types"`
	// Block is the plugin block to paste into a run file.
	Block string `json:"block"`
}

func newPluginInstallCmd() *cobra.Command {
	var keyArgs []string
	var dir string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "install [--key PUB]... [--dir DIR] [--json] ARCHIVE|DIR",
		Short: "Verify a distributed plugin and place it in the plugins directory",
		Long: `install reads a release (a .tar.gz, .tgz, .tar or .zip archive, or a
directory) holding exactly one binary named obversa-plugin-<name> and its
signature obversa-plugin-<name>.minisig, at the top level or inside one
top-level directory; everything else is ignored and nothing is executed
before it is verified. The signature must verify with one of the --key
public keys, name the binary's SHA-256, its file name and this platform; an
optional obversa-plugin-<name>.sha256 or SHA256SUMS must agree. Without
--key only the signature's form and digest are checked (integrity, not
origin). The binary lands read-only in DIR/<name>/<version>/ (default
$OBVERSA_PLUGINS_DIR or ~/.obversa/plugins) and the plugin block to paste
into a run file is printed.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := nonEmptyPath(args[0], "the plugin archive or directory", "obversa plugin install ./obversa-plugin-mock.tar.gz"); err != nil {
				return err
			}
			keys, err := loadKeys(keyArgs)
			if err != nil {
				return err
			}
			if dir == "" {
				if dir, err = defaultPluginsDir(); err != nil {
					return err
				}
			}
			inst, err := launch.Install(args[0], launch.InstallOptions{Dir: dir, Keys: keys})
			if err != nil {
				return usageErr(err)
			}
			return reportInstall(cmd, inst, keys, asJSON)
		},
	}
	cmd.Flags().StringArrayVar(&keyArgs, "key", nil, "trusted public key, inline or a .pub file (repeatable)")
	cmd.Flags().StringVar(&dir, "dir", "", "plugins directory (default $"+pluginsDirEnv+" or ~/.obversa/plugins)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print what was installed and the plugin block as one JSON object")
	return cmd
}

// reportInstall tells what install placed (inst): the warning an
// unverified origin earns, then, as text or with asJSON one JSON object,
// the plugin, where it lies, the key that verified it, what was ignored
// and the plugin block to paste into a run file.
func reportInstall(cmd *cobra.Command, inst *launch.Installed, keys []plugin.PublicKey, asJSON bool) error {
	st := inst.Statement
	if inst.KeyID == "" {
		fmt.Fprintln(cmd.ErrOrStderr(), "warning: no --key given: the signature's origin was not verified, only that it names these bytes")
	}
	trusted := make([]string, 0, len(keys))
	for _, k := range keys {
		if k.ID() == inst.KeyID {
			trusted = append(trusted, fmt.Sprintf("%q", k.String()))
		}
	}
	types := []string{}
	d, err := describeBinary(cmd.Context(), inst.Path)
	if err != nil {
		fmt.Fprintf(cmd.ErrOrStderr(), "warning: describing the plugin failed: %v\n", err)
	} else {
		for _, t := range d.Description.Types {
			types = append(types, string(t))
		}
	}
	var block strings.Builder
	printPluginBlock(&block, st.Name, types, inst.Path, inst.SHA256, trusted)
	w := cmd.OutOrStdout()
	if asJSON {
		writeJSON(w, installed{Name: st.Name, Version: st.Version, Platform: st.Platform(), SHA256: inst.SHA256, Path: inst.Path,
			KeyID: inst.KeyID, AlreadyInstalled: inst.AlreadyInstalled, Ignored: append([]string{}, inst.Ignored...), Types: types, Block: block.String()})
		return nil
	}
	verb := "installed"
	if inst.AlreadyInstalled {
		verb = "already installed"
	}
	fmt.Fprintf(w, "%s %s %s (%s, sha256 %s) at %s\n", verb, st.Name, st.Version, st.Platform(), inst.SHA256, inst.Path)
	if inst.KeyID != "" {
		fmt.Fprintf(w, "signature verified: key %s\n", inst.KeyID)
	}
	for _, f := range inst.Ignored {
		fmt.Fprintf(w, "ignored %s\n", lineText(f))
	}
	fmt.Fprintln(w, "\nadd it to a run file:")
	fmt.Fprint(w, block.String())
	return nil
}

// printPluginBlock prints a run file's plugin block for an installed
// binary serving types (none known leaves the choice to the user).
func printPluginBlock(w io.Writer, name string, types []string, path, sum string, trusted []string) {
	fmt.Fprintf(w, "plugin %q {\n", name)
	switch len(types) {
	case 0:
		fmt.Fprintln(w, `  type         = "engine" # or "node"`)
	case 1:
		fmt.Fprintf(w, "  type         = %q\n", types[0])
	default:
		fmt.Fprintf(w, "  type         = %q # serves: %s\n", types[0], strings.Join(types, ", "))
	}
	fmt.Fprintf(w, "  path         = %q\n", path)
	fmt.Fprintf(w, "  sha256       = %q\n", sum)
	if len(trusted) > 0 {
		fmt.Fprintf(w, "  trusted_keys = [%s]\n", strings.Join(trusted, ", "))
	}
	fmt.Fprintln(w, "}")
}
