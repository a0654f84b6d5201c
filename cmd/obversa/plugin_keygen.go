package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/obversa/obversa/plugin"
)

// keygenResult is the --json result of plugin keygen.
type keygenResult struct {
	KeyID     string `json:"key_id"`
	SecretKey string `json:"secret_key"` // the file written
	PublicKey string `json:"public_key"` // the file written
	Public    string `json:"public"`     // the public key's base64 line, for trusted_keys
	Encrypted bool   `json:"encrypted"`
}

func newPluginKeygenCmd() *cobra.Command {
	var secret, public, passwordFile string
	var force, asJSON bool
	cmd := &cobra.Command{
		Use:   "keygen [--secret FILE] [--public FILE] [--password-file FILE] [--json]",
		Short: "Create a minisign key pair for signing plugins",
		Long: `keygen creates a minisign (Ed25519) key pair in the reference tool's format:
the secret key (mode 0600) signs plugins with ` + "`obversa plugin sign`" + `, the public
key goes into trusted_keys. Without --password-file the secret key is
stored unencrypted (like minisign -W): keep it in a secrets store. With a
password file it is encrypted with scrypt (about a GiB of memory, a few
seconds). Existing files are kept unless --force.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if !force {
				for _, p := range []string{secret, public} {
					if _, err := os.Lstat(p); err == nil {
						return usageErr(fmt.Errorf("%s exists; pass --force to overwrite it", p))
					}
				}
			}
			pw, err := readPassword(passwordFile)
			if err != nil {
				return err
			}
			k, err := plugin.GenerateSigningKey()
			if err != nil {
				return failedErr(err)
			}
			var sec []byte
			if pw != "" {
				sec, err = k.Encrypt(pw)
			} else {
				sec, err = k.MarshalText()
			}
			if err != nil {
				return failedErr(err)
			}
			pub, _ := k.PublicKey().MarshalText()
			if abs(secret) == abs(public) {
				return usageErr(fmt.Errorf("--secret and --public both name %s; give the two keys two files", secret))
			}
			// The public key first: a key pair is useless without it, so a
			// failure there must not leave a lone secret key behind.
			if err := writeNew(public, pub, 0o644, force); err != nil {
				return err
			}
			if err := writeNew(secret, sec, 0o600, force); err != nil {
				_ = os.Remove(public)
				return err
			}
			w := cmd.OutOrStdout()
			if asJSON {
				writeJSON(w, keygenResult{KeyID: k.ID(), SecretKey: secret, PublicKey: public, Public: k.PublicKey().String(), Encrypted: pw != ""})
				return nil
			}
			state := "unencrypted: keep it private"
			if pw != "" {
				state = "encrypted with the password"
			}
			fmt.Fprintf(w, "key id:     %s\nsecret key: %s (%s)\npublic key: %s\n", k.ID(), secret, state, public)
			fmt.Fprintf(w, "trust it in a run file with:\n  trusted_keys = [%q]\n", k.PublicKey().String())
			return nil
		},
	}
	cmd.Flags().StringVar(&secret, "secret", defaultSecretKey, "secret key file to write")
	cmd.Flags().StringVar(&public, "public", defaultPublicKey, "public key file to write")
	cmd.Flags().StringVar(&passwordFile, "password-file", "", "encrypt the secret key with the password on this file's first line")
	cmd.Flags().BoolVar(&force, "force", false, "overwrite existing key files")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the key id, the files and the public key as one JSON object")
	return cmd
}

// abs returns path made absolute (path itself when that fails).
func abs(path string) string {
	if a, err := filepath.Abs(path); err == nil {
		return a
	}
	return path
}
