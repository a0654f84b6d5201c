package plugin_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/obversa/obversa/plugin"
)

func refPublicKey(t *testing.T) plugin.PublicKey {
	t.Helper()
	k, err := plugin.ParsePublicKey(readFile(t, filepath.Join(refDir, "minisign.pub")))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestReferencePublicKey reads the reference tool's .pub file, accepts its
// bare base64 line too, and writes the same file back byte for byte.
func TestReferencePublicKey(t *testing.T) {
	t.Parallel()
	file := readFile(t, filepath.Join(refDir, "minisign.pub"))
	k := refPublicKey(t)
	if k.ID() != refKeyID {
		t.Errorf("ID = %s, want %s", k.ID(), refKeyID)
	}
	line := strings.Split(strings.TrimSpace(string(file)), "\n")[1]
	if k.String() != line {
		t.Errorf("String = %q, want %q", k.String(), line)
	}
	bare, err := plugin.ParsePublicKey([]byte("  " + line + "\n"))
	if err != nil || !bare.Equal(k) {
		t.Errorf("ParsePublicKey(bare line) = %v, %v; want the same key", bare.ID(), err)
	}
	text, _ := k.MarshalText()
	if diff := cmp.Diff(strings.TrimSpace(string(file)), strings.TrimSpace(string(text))); diff != "" {
		t.Errorf("MarshalText differs from the reference file (-want +got):\n%s", diff)
	}
}

func TestParsePublicKeyRejects(t *testing.T) {
	t.Parallel()
	line := refPublicKey(t).String()
	tests := []struct{ name, text string }{
		{"empty", ""},
		{"not base64", "not a key"},
		{"secret key", string(readFile(t, filepath.Join(refDir, "minisign-nopassword-0.key")))},
		{"truncated", line[:40]},
		{"three lines", "untrusted comment: x\n" + line + "\n" + line},
		{"two keys on a line", line + " " + line},
		{"wrong algorithm", "RWx" + line[3:]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := plugin.ParsePublicKey([]byte(tt.text)); !errors.Is(err, plugin.ErrPublicKey) {
				t.Errorf("ParsePublicKey(%q) = %v, want ErrPublicKey", tt.text, err)
			}
		})
	}
}

// TestReferenceSecretKeys opens the reference tool's encrypted and
// unencrypted secret keys, writes the unencrypted one back byte for byte,
// and signs with the encrypted one something its public key verifies.
func TestReferenceSecretKeys(t *testing.T) {
	t.Parallel()
	plain := readFile(t, filepath.Join(refDir, "minisign-nopassword-0.key"))
	k, err := plugin.ParseSigningKey(plain, "")
	if err != nil {
		t.Fatal(err)
	}
	if k.ID() != "3728470A8118E56E" {
		t.Errorf("ID = %s", k.ID())
	}
	text, _ := k.MarshalText()
	if diff := cmp.Diff(strings.TrimSpace(string(plain)), strings.TrimSpace(string(text))); diff != "" {
		t.Errorf("MarshalText differs from the reference file (-want +got):\n%s", diff)
	}

	enc := readFile(t, filepath.Join(refDir, "minisign.key"))
	if _, err := plugin.ParseSigningKey(enc, ""); !errors.Is(err, plugin.ErrSigningKey) {
		t.Errorf("encrypted key without password: %v, want ErrSigningKey", err)
	}
	if _, err := plugin.ParseSigningKey(enc, "wrong"); !errors.Is(err, plugin.ErrSigningKey) {
		t.Errorf("encrypted key with a wrong password: %v, want ErrSigningKey", err)
	}
	// The reference key's scrypt parameters make this take a few seconds.
	k, err = plugin.ParseSigningKey(enc, refPassword)
	if err != nil {
		t.Fatal(err)
	}
	if k.ID() != refKeyID || !k.PublicKey().Equal(refPublicKey(t)) {
		t.Fatalf("decrypted key %s does not match minisign.pub", k.ID())
	}
	bin, st := writeBinary(t, "payload")
	sig, _, err := k.Sign(bin, st)
	if err != nil {
		t.Fatal(err)
	}
	writeSig(t, bin, sig)
	if _, err := plugin.VerifySignature(bin, bin+plugin.SignatureSuffix, []plugin.PublicKey{refPublicKey(t)}); err != nil {
		t.Errorf("VerifySignature: %v", err)
	}
}

func TestParseSigningKeyRejects(t *testing.T) {
	t.Parallel()
	for _, text := range []string{"", "garbage", string(readFile(t, filepath.Join(refDir, "minisign.pub")))} {
		if _, err := plugin.ParseSigningKey([]byte(text), ""); !errors.Is(err, plugin.ErrSigningKey) {
			t.Errorf("ParseSigningKey(%q) = %v, want ErrSigningKey", text, err)
		}
	}
}
