package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/obversa/obversa/host/launch"
	"github.com/obversa/obversa/plugin"
	"github.com/obversa/obversa/plugin/confine"
	"github.com/obversa/obversa/plugin/pluginhost"
)

// described is a plugin binary's answer to Describe with what the host
// learnt launching it.
type described struct {
	Path        string              `json:"path"`
	SHA256      string              `json:"sha256"`
	Protocol    int                 `json:"protocol"`
	Description *plugin.Description `json:"description"`
	// Confinement is what the kernel offers and how describe confined
	// the binary; InRun is the confinement a run gives it by default.
	Confinement string `json:"confinement"`
	InRun       string `json:"in_run"`
}

// describeBinary launches a binary as a plugin (as an engine, else as a
// node binding), asks Describe and stops it. The binary is executed: only
// describe binaries you would run.
func describeBinary(ctx context.Context, bin string) (*described, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	path := absPath(bin)
	if launch.IsSidecar(path) {
		return nil, fmt.Errorf("%w: %s is a signature, key or checksum file", launch.ErrSidecar, bin)
	}
	// The binary is read once, into a private copy named by its digest;
	// only that copy is executed.
	tmp, err := os.MkdirTemp("", "obversa-describe-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	copied, err := plugin.CopyBinary("describe", path, tmp, plugin.CopyOptions{})
	if err != nil {
		return nil, err
	}
	// The binary runs confined: it may write only a private scratch
	// directory and has no network.
	scratch := filepath.Join(tmp, "scratch")
	if err := os.Mkdir(scratch, 0o700); err != nil {
		return nil, err
	}
	sup := confine.Detect()
	prep, err := confine.Prepare(confine.Spec{Own: []string{scratch}, Protect: []string{filepath.Dir(copied.Path)}}, sup, false)
	if err != nil {
		return nil, err
	}
	defer prep.Release()
	var errs []error
	for _, typ := range []plugin.Type{plugin.TypeEngine, plugin.TypeNode, plugin.TypePolicy} {
		d, err := describeAs(ctx, path, copied.Path, copied.SHA256, typ, prep, scratch)
		if err == nil {
			how := "describe ran it writing only a private scratch directory, without network"
			if sup.LandlockABI == 0 {
				how = "describe ran it unconfined"
			}
			return &described{Path: path, SHA256: copied.SHA256, Protocol: plugin.ProtocolVersion, Description: d,
				Confinement: sup.String() + "; " + how, InRun: inRun(d.Types)}, nil
		}
		if !errors.Is(err, plugin.ErrWrongType) {
			return nil, err
		}
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}

// inRun says what confinement a run gives a plugin serving types by
// default (docs/confinement.md).
func inRun(types []plugin.Type) string {
	network := "network denied"
	if slices.Contains(types, plugin.TypeEngine) {
		network = "network allowed as an engine, denied as a node or policy"
	}
	return "writes the workspace root, the run's scratch directory and its state directory; reads everything; " +
		network + "; no memory limit (confine { … } and limits { plugin_memory } change these)"
}

func describeAs(ctx context.Context, source, path, sum string, typ plugin.Type, prep *confine.Prepared, scratch string) (*plugin.Description, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	env := append(launch.Env(nil), "TMPDIR="+scratch)
	c, err := pluginhost.Launch(ctx, plugin.LaunchConfig{Name: "describe", Type: typ, Path: path, Source: source, SHA256: sum, Verified: true, Env: env, Confine: prep})
	if err != nil {
		return nil, err
	}
	d, err := c.Describer().Describe(ctx)
	// A plugin that started processes it cannot be stopped from fails
	// describe: the user asked to launch it only for its answer.
	if cerr := c.Close(); cerr != nil {
		return nil, errors.Join(err, cerr)
	}
	return d, err
}

func newPluginDescribeCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "describe [--json] BIN",
		Short: "Launch a plugin binary and print its Describe answer",
		Long: `describe launches BIN as a plugin (with the allow-listed environment, no
shell), asks Describe and stops it: name, version, the plugin types it
serves, the protocol version negotiated, capabilities and failure kinds.
BIN is executed, pinned only to its current digest: describe binaries you
would run.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			d, err := describeBinary(cmd.Context(), args[0])
			if err != nil {
				return describeErr(args[0], err)
			}
			if asJSON {
				b, _ := json.Marshal(d)
				fmt.Fprintln(cmd.OutOrStdout(), string(b))
				return nil
			}
			printDescription(cmd.OutOrStdout(), d)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the answer as one JSON object")
	return cmd
}

// notAPlugin are the errors of a BIN that is not a plugin binary one can
// launch: missing, not a regular file, a signature or key file, not
// executable, or a program that does not answer as a plugin of the types
// describe asks for.
var notAPlugin = []error{
	fs.ErrNotExist, plugin.ErrPluginMissing, plugin.ErrNotRegular, launch.ErrSidecar,
	syscall.ENOEXEC, syscall.EACCES, plugin.ErrHandshake, plugin.ErrNotServing,
	plugin.ErrWrongType, launch.ErrStart,
}

// describeErr is the exit status of describe's error for BIN bin: a BIN that is not
// a plugin (notAPlugin) is refused as a user input problem (exit 2), as
// `run` and `validate --plugins` refuse a plugin that fails to start
// (docs/cli.md, exit codes); anything else failed (exit 1).
func describeErr(bin string, err error) error {
	if errors.Is(err, syscall.ENOEXEC) {
		// The error names only the private copy that was executed.
		err = fmt.Errorf("%s is not a program this system can execute; name the plugin binary: %w", echoArg(bin), err)
	}
	for _, e := range notAPlugin {
		if errors.Is(err, e) {
			return usageErr(err)
		}
	}
	return failedErr(err)
}

func printDescription(w io.Writer, d *described) {
	desc := d.Description
	types := make([]string, 0, len(desc.Types))
	for _, t := range desc.Types {
		types = append(types, lineText(string(t)))
	}
	var caps []string
	if desc.Capabilities.Admit {
		caps = append(caps, "admit")
	}
	if desc.Capabilities.StructuredOutput {
		caps = append(caps, "structured_output")
	}
	if desc.Capabilities.Tools {
		caps = append(caps, "tools")
	}
	conc := "unlimited"
	if n := desc.Capabilities.MaxConcurrency; n > 0 {
		conc = fmt.Sprint(n)
	}
	kinds := make([]string, 0, len(desc.FailureKinds))
	for _, k := range desc.FailureKinds {
		kinds = append(kinds, lineText(string(k)))
	}
	fmt.Fprintf(w, "name:            %s\n", lineText(desc.Name))
	fmt.Fprintf(w, "version:         %s\n", lineText(desc.Version))
	fmt.Fprintf(w, "types:           %s\n", orNone(strings.Join(types, ", ")))
	fmt.Fprintf(w, "protocol:        %d\n", d.Protocol)
	fmt.Fprintf(w, "capabilities:    %s\n", orNone(strings.Join(caps, ", ")))
	fmt.Fprintf(w, "max concurrency: %s\n", conc)
	fmt.Fprintf(w, "failure kinds:   %s\n", orNone(strings.Join(kinds, ", ")))
	fmt.Fprintf(w, "sha256:          %s\n", d.SHA256)
	fmt.Fprintf(w, "path:            %s\n", d.Path)
	fmt.Fprintf(w, "confinement:     %s\n", d.Confinement)
	fmt.Fprintf(w, "in a run:        %s\n", d.InRun)
}

func orNone(s string) string { return or(s, "none") }
