package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/obversa/obversa/plugin"
)

// verifyResult is the --json result of plugin verify.
type verifyResult struct {
	Path  string `json:"path"`
	KeyID string `json:"key_id"`
	statementJSON
}

func newPluginVerifyCmd() *cobra.Command {
	var keyArgs []string
	var sigPath string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "verify [--key PUB]... [--json] BIN",
		Short: "Verify a plugin binary's signature (BIN.minisig) and its statement",
		Long: `verify checks that BIN.minisig is a valid signature of BIN by one of the
given public keys (inline "RW…" or .pub files; default ./minisign.pub) and
that its trusted comment is a plugin statement naming BIN's SHA-256. Exit 0
when it is, 1 (PLUGIN_UNTRUSTED) when it is not, 2 for usage errors.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			bin := args[0]
			if len(keyArgs) == 0 {
				if _, err := os.Stat(defaultPublicKey); err != nil {
					return usageErr(fmt.Errorf("no --key given and no %s in the current directory", defaultPublicKey))
				}
				keyArgs = []string{defaultPublicKey}
			}
			keys, err := loadKeys(keyArgs)
			if err != nil {
				return err
			}
			if sigPath == "" {
				sigPath = bin + plugin.SignatureSuffix
			}
			v, err := plugin.VerifySignature(bin, sigPath, keys)
			switch {
			case errors.Is(err, plugin.ErrUntrusted):
				return failedErr(err)
			case err != nil:
				return usageErr(err)
			}
			st := v.Statement
			if asJSON {
				writeJSON(cmd.OutOrStdout(), verifyResult{Path: bin, KeyID: v.KeyID, statementJSON: statementOf(st)})
				return nil
			}
			fmt.Fprintf(cmd.OutOrStdout(), "ok: %s is %s %s (protocol %d, %s), sha256 %s, signed by key %s\n",
				bin, st.Name, st.Version, st.Protocol, st.Platform(), v.SHA256, v.KeyID)
			return nil
		},
	}
	cmd.Flags().StringArrayVar(&keyArgs, "key", nil, "trusted public key, inline or a .pub file (repeatable; default ./minisign.pub)")
	cmd.Flags().StringVar(&sigPath, "signature", "", "signature file (default: BIN.minisig)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the verified statement as one JSON object")
	return cmd
}
