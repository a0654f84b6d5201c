package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode"

	"github.com/spf13/cobra"

	"github.com/obversa/obversa/host/launch"
	"github.com/obversa/obversa/plugin"
)

// statementJSON is a signed plugin statement in the --json results of
// plugin sign and plugin verify.
type statementJSON struct {
	Name     string `json:"name"`
	Version  string `json:"version"`
	Protocol int    `json:"protocol"`
	Platform string `json:"platform"`
	SHA256   string `json:"sha256"`
}

func statementOf(st plugin.Statement) statementJSON {
	return statementJSON{Name: st.Name, Version: st.Version, Protocol: st.Protocol, Platform: st.Platform(), SHA256: st.SHA256}
}

// signResult is the --json result of plugin sign: the statement signed
// and where the signature went.
type signResult struct {
	Path      string `json:"path"`
	Signature string `json:"signature"` // the .minisig file written
	KeyID     string `json:"key_id"`
	statementJSON
}

func newPluginSignCmd() *cobra.Command {
	var key, passwordFile, name, version, goos, goarch, out string
	var protocol int
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "sign --key SECRET [--name N --version V] [--json] BIN",
		Short: "Sign a plugin binary (writes BIN.minisig)",
		Long: `sign writes BIN.minisig, a minisign signature whose trusted comment binds
the plugin's name, version, protocol version, OS/arch and SHA-256:

  timestamp:…	file:BIN	obversa-plugin:NAME	version:V	protocol:1	os:linux	arch:amd64	sha256:…

Name and version default to the plugin's own Describe answer (the binary is
launched once to ask); pass both to sign without running it, for example a
binary built for another platform. OS and arch are read from the binary's
header. The reference tool verifies the result: minisign -V -p minisign.pub -m BIN.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			bin := args[0]
			if launch.IsSidecar(bin) {
				return usageErr(fmt.Errorf("%s is a signature, key or checksum file, not a plugin binary", bin))
			}
			k, err := readSigningKey(key, passwordFile)
			if err != nil {
				return err
			}
			if _, err := os.Stat(bin); err != nil {
				return usageErr(err)
			}
			st, err := completeStatement(cmd.Context(), bin, plugin.Statement{Name: name, Version: version, Protocol: protocol, OS: goos, Arch: goarch})
			if err != nil {
				return err
			}
			sig, st, err := k.Sign(bin, st)
			if errors.Is(err, plugin.ErrStatement) {
				return usageErr(err)
			}
			if err != nil {
				return failedErr(err)
			}
			if out == "" {
				out = bin + plugin.SignatureSuffix
			}
			if err := os.WriteFile(out, sig, 0o644); err != nil {
				return failedErr(err)
			}
			if asJSON {
				writeJSON(cmd.OutOrStdout(), signResult{Path: bin, Signature: out, KeyID: k.ID(), statementJSON: statementOf(st)})
				return nil
			}
			fmt.Fprintf(cmd.OutOrStdout(), "signed %s (%s %s, protocol %d, %s, sha256 %s) with key %s\nwrote %s\n",
				bin, st.Name, st.Version, st.Protocol, st.Platform(), st.SHA256, k.ID(), out)
			return nil
		},
	}
	cmd.Flags().StringVar(&key, "key", defaultSecretKey, "minisign secret key file")
	cmd.Flags().StringVar(&passwordFile, "password-file", "", "password of an encrypted secret key, on this file's first line")
	cmd.Flags().StringVar(&name, "name", "", "plugin name to sign (default: the plugin's Describe name)")
	cmd.Flags().StringVar(&version, "version", "", "plugin version to sign (default: the plugin's Describe version)")
	betweenVar(cmd.Flags(), &protocol, "protocol", plugin.ProtocolVersion, 1, plugin.ProtocolVersion,
		"the plugin protocol versions this obversa speaks; it cannot launch a plugin of another", "plugin protocol version the binary speaks")
	cmd.Flags().StringVar(&goos, "os", "", "GOOS the binary is built for (default: read from the binary)")
	cmd.Flags().StringVar(&goarch, "arch", "", "GOARCH the binary is built for (default: read from the binary)")
	cmd.Flags().StringVar(&out, "out", "", "signature file to write (default: BIN.minisig)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print what was signed and the signature file as one JSON object")
	return cmd
}

// readSigningKey reads the minisign secret key file key, decrypting it
// with the password on passwordFile's first line when it is encrypted.
func readSigningKey(key, passwordFile string) (plugin.SigningKey, error) {
	pw, err := readPassword(passwordFile)
	if err != nil {
		return plugin.SigningKey{}, err
	}
	text, err := os.ReadFile(key)
	if err != nil {
		return plugin.SigningKey{}, fileFlagErr("--key", key, err,
			"pass --key FILE naming a minisign secret key, or make a key pair with `obversa plugin keygen` (minisign.key and minisign.pub)")
	}
	k, err := plugin.ParseSigningKey(text, pw)
	if err != nil {
		return plugin.SigningKey{}, usageErr(fmt.Errorf("--key %s: %w", key, err))
	}
	return k, nil
}

// completeStatement fills in what st leaves out for signing bin: OS and
// arch from the binary's header, name and version from the plugin's own
// Describe answer (launching it once), the file field and the time.
func completeStatement(ctx context.Context, bin string, st plugin.Statement) (plugin.Statement, error) {
	if st.OS == "" || st.Arch == "" {
		o, a, err := plugin.BinaryPlatform(bin)
		if err != nil {
			return st, usageErr(fmt.Errorf("%w; pass --os and --arch", err))
		}
		st.OS, st.Arch = or(st.OS, o), or(st.Arch, a)
	}
	if st.Name == "" || st.Version == "" {
		d, err := describeBinary(ctx, bin)
		if err != nil {
			return st, usageErr(fmt.Errorf("asking the plugin for its name and version: %w; pass --name and --version", err))
		}
		st.Name, st.Version = or(st.Name, d.Description.Name), or(st.Version, d.Description.Version)
	}
	st.File, st.Timestamp = fileField(bin), time.Now().UTC().Truncate(time.Second)
	return st, nil
}

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// fileField is the binary's base name for the statement, or "" when it
// holds control characters, which a trusted comment cannot carry.
func fileField(bin string) string {
	base := filepath.Base(bin)
	if strings.ContainsFunc(base, unicode.IsControl) {
		return ""
	}
	return base
}
