package plugin_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/obversa/obversa/plugin"
)

// addRefSeeds adds the reference vectors' files to a fuzzer's corpus.
func addRefSeeds(f *testing.F, names ...string) {
	f.Helper()
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(refDir, n))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
}

// FuzzParseSignature checks that ParseSignature never panics, fails only
// with ErrSignatureFormat, and that what it accepts never verifies against
// an unrelated key.
func FuzzParseSignature(f *testing.F) {
	addRefSeeds(f, "message.txt.minisig", "minisign.pub")
	f.Add([]byte("untrusted comment: x\nRUQ=\ntrusted comment: y\nAAAA\n"))
	f.Add([]byte(""))
	k, err := plugin.GenerateSigningKey()
	if err != nil {
		f.Fatal(err)
	}
	pub := k.PublicKey()
	f.Fuzz(func(t *testing.T, text []byte) {
		sig, err := plugin.ParseSignature(text)
		if err != nil {
			if !errors.Is(err, plugin.ErrSignatureFormat) {
				t.Fatalf("error %v does not wrap ErrSignatureFormat", err)
			}
			return
		}
		if len(sig.KeyID) != 16 || strings.ContainsAny(sig.TrustedComment, "\r\n") {
			t.Fatalf("accepted signature has key id %q, trusted comment %q", sig.KeyID, sig.TrustedComment)
		}
		if _, ok, err := sig.Verify(bytes.NewReader(text), pub); ok || err != nil {
			t.Fatalf("Verify with a fresh key = %v, %v", ok, err)
		}
	})
}

// FuzzParseStatement checks that ParseStatement never panics, fails only
// with ErrStatement, and that every accepted statement is valid and
// survives TrustedComment → ParseStatement unchanged.
func FuzzParseStatement(f *testing.F) {
	f.Add("timestamp:1767225600\tfile:obversa-plugin-cmd\tobversa-plugin:cmd\tversion:0.1.0\tprotocol:1\tos:linux\tarch:amd64\tsha256:" + testDigest)
	f.Add("obversa-plugin:x\tversion:1\tprotocol:1\tos:linux\tarch:amd64\tsha256:" + testDigest + "\textra:1")
	f.Add("timestamp:1614549543\tfile:message.txt")
	f.Add("")
	f.Fuzz(func(t *testing.T, comment string) {
		st, err := plugin.ParseStatement(comment)
		if err != nil {
			if !errors.Is(err, plugin.ErrStatement) {
				t.Fatalf("error %v does not wrap ErrStatement", err)
			}
			return
		}
		if err := st.Validate(); err != nil {
			t.Fatalf("accepted statement is invalid: %v", err)
		}
		back, err := plugin.ParseStatement(st.TrustedComment())
		if err != nil {
			t.Fatalf("re-parsing %q: %v", st.TrustedComment(), err)
		}
		if back != st {
			t.Fatalf("round trip changed %+v to %+v", st, back)
		}
	})
}

// FuzzParsePublicKey checks that ParsePublicKey never panics, fails only
// with ErrPublicKey, and that accepted keys survive MarshalText and
// String.
func FuzzParsePublicKey(f *testing.F) {
	addRefSeeds(f, "minisign.pub", "minisign.key", "message.txt.minisig")
	f.Add([]byte("RWRQhGcHOBlzw4CoKyugkk4ioDfoxlXxC9LBx+VNhJ3w9w+cAxgvPsuo"))
	f.Fuzz(func(t *testing.T, text []byte) {
		k, err := plugin.ParsePublicKey(text)
		if err != nil {
			if !errors.Is(err, plugin.ErrPublicKey) {
				t.Fatalf("error %v does not wrap ErrPublicKey", err)
			}
			return
		}
		file, _ := k.MarshalText()
		for _, form := range [][]byte{file, []byte(k.String())} {
			back, err := plugin.ParsePublicKey(form)
			if err != nil || !back.Equal(k) || back.ID() != k.ID() {
				t.Fatalf("re-parsing %q = %v, %v", form, back.ID(), err)
			}
		}
	})
}

// FuzzParseSigningKey checks that ParseSigningKey never panics and fails
// only with ErrSigningKey. No password is given, so an encrypted key is
// refused before any key derivation.
func FuzzParseSigningKey(f *testing.F) {
	addRefSeeds(f, "minisign-nopassword-0.key", "minisign.key", "minisign.pub")
	f.Fuzz(func(t *testing.T, text []byte) {
		k, err := plugin.ParseSigningKey(text, "")
		if err != nil {
			if !errors.Is(err, plugin.ErrSigningKey) {
				t.Fatalf("error %v does not wrap ErrSigningKey", err)
			}
			return
		}
		if len(k.ID()) != 16 {
			t.Fatalf("key id %q", k.ID())
		}
	})
}

// FuzzParseChecksums checks that ParseChecksums never panics, fails only
// with ErrChecksumFormat, and returns only lower-case SHA-256 digests.
func FuzzParseChecksums(f *testing.F) {
	f.Add([]byte(testDigest + "  obversa-plugin-cmd\n"))
	f.Add([]byte("SHA256 (x) = " + strings.ToUpper(testDigest) + "\n"))
	f.Add([]byte("# c\n\n" + testDigest + "\n"))
	f.Fuzz(func(t *testing.T, text []byte) {
		sums, err := plugin.ParseChecksums(text)
		if err != nil {
			if !errors.Is(err, plugin.ErrChecksumFormat) {
				t.Fatalf("error %v does not wrap ErrChecksumFormat", err)
			}
			return
		}
		for name, sum := range sums {
			if len(sum) != 64 || strings.ToLower(sum) != sum || strings.ContainsAny(name, "\n") {
				t.Fatalf("entry %q = %q", name, sum)
			}
		}
	})
}
