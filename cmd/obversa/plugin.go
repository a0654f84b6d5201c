package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/obversa/obversa/host/launch"
	"github.com/obversa/obversa/plugin"
)

// defaultPublicKey and defaultSecretKey are the key files the reference
// minisign tool uses, in the current directory.
const (
	defaultPublicKey = "minisign.pub"
	defaultSecretKey = "minisign.key"
)

func newPluginCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "plugin",
		Short: "Work with plugin binaries: hash, lock, keygen, sign, verify, install, describe, conformance",
	}
	cmd.AddCommand(newPluginHashCmd(), newPluginLockCmd(), newPluginKeygenCmd(), newPluginSignCmd(),
		newPluginVerifyCmd(), newPluginInstallCmd(), newPluginDescribeCmd(), newPluginConformanceCmd())
	return cmd
}

// loadKeys resolves --key values: inline public keys or .pub files
// relative to the current directory.
func loadKeys(entries []string) ([]plugin.PublicKey, error) {
	var keys []plugin.PublicKey
	for _, e := range entries {
		k, err := launch.LoadPublicKey(e, ".")
		if err != nil {
			return nil, usageErr(fmt.Errorf("--key: %w", err))
		}
		keys = append(keys, k)
	}
	return keys, nil
}

// readPassword returns the first line of a password file, "" for no file.
func readPassword(path string) (string, error) {
	if path == "" {
		return "", nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fileFlagErr("--password-file", path, err, "pass --password-file FILE naming a file whose first line is the key's password")
	}
	line, _, _ := bytes.Cut(b, []byte("\n"))
	pw := string(bytes.TrimSuffix(line, []byte("\r")))
	if pw == "" {
		return "", usageErr(fmt.Errorf("--password-file: %s holds an empty password", path))
	}
	return pw, nil
}

// writeNew writes a file that must not exist yet, unless force.
func writeNew(path string, data []byte, perm os.FileMode, force bool) error {
	flags := os.O_CREATE | os.O_WRONLY | os.O_TRUNC
	if !force {
		flags |= os.O_EXCL
	}
	f, err := os.OpenFile(path, flags, perm)
	if errors.Is(err, os.ErrExist) {
		return usageErr(fmt.Errorf("%s exists; pass --force to overwrite it", path))
	}
	if err != nil {
		return failedErr(err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return failedErr(err)
	}
	if err := f.Chmod(perm); err != nil {
		f.Close()
		return failedErr(err)
	}
	if err := f.Close(); err != nil {
		return failedErr(err)
	}
	return nil
}

// absPath makes a path absolute for messages and launching.
func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}
