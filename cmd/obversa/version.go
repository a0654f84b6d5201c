package main

import (
	"fmt"
	"io"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"

	"github.com/obversa/obversa/plugin"
)

// versionInfo is what `obversa version` reports, read from the binary's
// build information (runtime/debug.ReadBuildInfo).
type versionInfo struct {
	// Version is the main module's version: a release tag, the
	// pseudo-version the go command stamps from version control, or
	// "(devel)".
	Version string `json:"version"`
	// Commit is the VCS revision the binary was built from, "" when the
	// build carried none (go build -buildvcs=false, or outside a checkout).
	Commit string `json:"commit,omitempty"`
	// CommitTime is the revision's commit time (RFC 3339), "" when unknown.
	CommitTime string `json:"commit_time,omitempty"`
	// Modified is true when the work tree had uncommitted changes.
	Modified bool `json:"modified"`
	// Go is the toolchain that built the binary, e.g. "go1.26.0".
	Go string `json:"go"`
	// Protocol is the plugin protocol major version this host speaks.
	Protocol int `json:"protocol"`
}

// readVersion reads the version of the running binary.
func readVersion() versionInfo { return versionOf(debug.ReadBuildInfo()) }

// versionOf extracts the version from build information; ok false (a
// binary without it) leaves everything but the protocol unknown.
func versionOf(bi *debug.BuildInfo, ok bool) versionInfo {
	v := versionInfo{Version: "(devel)", Protocol: plugin.ProtocolVersion}
	if !ok || bi == nil {
		return v
	}
	v.Go = bi.GoVersion
	if bi.Main.Version != "" {
		v.Version = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Commit = s.Value
		case "vcs.time":
			v.CommitTime = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

// String is the human form, one fact per line.
func (v versionInfo) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "obversa %s\n", v.Version)
	switch {
	case v.Commit == "":
		b.WriteString("commit:   unknown (built without version control information)\n")
	default:
		fmt.Fprintf(&b, "commit:   %s", v.Commit)
		if v.CommitTime != "" {
			fmt.Fprintf(&b, " (%s)", v.CommitTime)
		}
		if v.Modified {
			b.WriteString(", with uncommitted changes")
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "go:       %s\n", v.Go)
	fmt.Fprintf(&b, "protocol: %d\n", v.Protocol)
	return b.String()
}

func newVersionCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version [--json]",
		Short: "Print the version, commit, Go version and plugin protocol version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			printVersion(cmd.OutOrStdout(), asJSON)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the version as one JSON object")
	return cmd
}

func printVersion(w io.Writer, asJSON bool) {
	v := readVersion()
	if asJSON {
		writeJSON(w, v)
		return
	}
	fmt.Fprint(w, v)
}
