package plugin_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"aead.dev/minisign"
	"github.com/google/go-cmp/cmp"

	"github.com/obversa/obversa/plugin"
)

// Reference vectors (testdata/minisign/README.md).
const (
	refDir      = "testdata/minisign"
	refKeyID    = "C373193807678450"
	refPassword = "correct horse battery staple"
)

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestReferenceSignature verifies a signature made by the reference tool
// (legacy algorithm, the reference trusted comment): the cryptography
// checks out, and VerifySignature refuses it only because its trusted
// comment is not a plugin statement.
func TestReferenceSignature(t *testing.T) {
	t.Parallel()
	msgPath := filepath.Join(refDir, "message.txt")
	sigPath := msgPath + plugin.SignatureSuffix
	sig, err := plugin.ParseSignature(readFile(t, sigPath))
	if err != nil {
		t.Fatal(err)
	}
	want := plugin.Signature{KeyID: refKeyID, TrustedComment: "timestamp:1614549543\tfile:message.txt",
		UntrustedComment: "signature from minisign secret key", Prehashed: false}
	if diff := cmp.Diff(want, *sig, cmp.AllowUnexported(plugin.Signature{}), cmp.FilterPath(func(p cmp.Path) bool {
		return p.Last().String() == ".text"
	}, cmp.Ignore())); diff != "" {
		t.Errorf("ParseSignature (-want +got):\n%s", diff)
	}
	msg := readFile(t, msgPath)
	sha, ok, err := sig.Verify(bytes.NewReader(msg), refPublicKey(t))
	if err != nil || !ok {
		t.Fatalf("Verify(reference message) = %v, %v; want valid", ok, err)
	}
	if sum := sha256.Sum256(msg); sha != hex.EncodeToString(sum[:]) {
		t.Errorf("Verify digest = %s, want %x", sha, sum)
	}
	if _, ok, _ := sig.Verify(strings.NewReader("Hello World?\n"), refPublicKey(t)); ok {
		t.Error("Verify accepted a changed message")
	}
	_, err = plugin.VerifySignature(msgPath, sigPath, []plugin.PublicKey{refPublicKey(t)})
	var ue *plugin.UntrustedError
	if !errors.As(err, &ue) || ue.Reason != plugin.ReasonMalformed || !errors.Is(err, plugin.ErrStatement) {
		t.Fatalf("VerifySignature(reference) = %v, want ReasonMalformed wrapping ErrStatement", err)
	}
}

// writeBinary writes a file standing for a plugin binary and returns its
// path and a statement for it (SHA256 left to Sign).
func writeBinary(t *testing.T, content string) (string, plugin.Statement) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "obversa-plugin-demo")
	if err := os.WriteFile(path, []byte(content), 0o755); err != nil {
		t.Fatal(err)
	}
	return path, plugin.Statement{Name: "demo", Version: "1.2.3", Protocol: plugin.ProtocolVersion,
		OS: "linux", Arch: "amd64", File: filepath.Base(path), Timestamp: time.Unix(1767225600, 0).UTC()}
}

func writeSig(t *testing.T, bin string, sig []byte) {
	t.Helper()
	if err := os.WriteFile(bin+plugin.SignatureSuffix, sig, 0o644); err != nil {
		t.Fatal(err)
	}
}

func newKey(t *testing.T) plugin.SigningKey {
	t.Helper()
	k, err := plugin.GenerateSigningKey()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestSignVerifyRoundTrip(t *testing.T) {
	t.Parallel()
	k := newKey(t)
	bin, st := writeBinary(t, "the plugin's bytes")
	sig, signed, err := k.Sign(bin, st)
	if err != nil {
		t.Fatal(err)
	}
	writeSig(t, bin, sig)
	sum := sha256.Sum256([]byte("the plugin's bytes"))
	st.SHA256 = hex.EncodeToString(sum[:])
	if diff := cmp.Diff(st, signed); diff != "" {
		t.Errorf("signed statement (-want +got):\n%s", diff)
	}
	parsed, err := plugin.ParseSignature(sig)
	if err != nil {
		t.Fatal(err)
	}
	if !parsed.Prehashed || !strings.HasPrefix(strings.Split(string(sig), "\n")[1], "RU") {
		t.Errorf("signature is not the pre-hashed algorithm: %q", sig)
	}
	other := newKey(t)
	got, err := plugin.VerifySignature(bin, bin+plugin.SignatureSuffix, []plugin.PublicKey{other.PublicKey(), k.PublicKey()})
	if err != nil {
		t.Fatal(err)
	}
	sigSum := sha256.Sum256(sig)
	want := &plugin.Verified{KeyID: k.ID(), Statement: st, SHA256: st.SHA256, Signature: "sha256:" + hex.EncodeToString(sigSum[:])}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("VerifySignature (-want +got):\n%s", diff)
	}
	// The library itself accepts what Sign wrote.
	var pub minisign.PublicKey
	if err := pub.UnmarshalText([]byte(k.PublicKey().String())); err != nil {
		t.Fatal(err)
	}
	if !minisign.Verify(pub, []byte("the plugin's bytes"), sig) {
		t.Error("minisign.Verify rejects the signature")
	}
}

func TestSignRefuses(t *testing.T) {
	t.Parallel()
	k := newKey(t)
	bin, st := writeBinary(t, "x")
	st.SHA256 = strings.Repeat("0", 64)
	if _, _, err := k.Sign(bin, st); !errors.Is(err, plugin.ErrDigestMismatch) {
		t.Errorf("Sign with another digest: %v, want ErrDigestMismatch", err)
	}
	st.SHA256 = ""
	st.Name = "no/slash"
	if _, _, err := k.Sign(bin, st); !errors.Is(err, plugin.ErrStatement) {
		t.Errorf("Sign with a bad name: %v, want ErrStatement", err)
	}
	if _, _, err := k.Sign(filepath.Join(t.TempDir(), "missing"), st); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Sign of a missing file: %v, want fs.ErrNotExist", err)
	}
}

// libraryKey returns a key as both our SigningKey and the library's
// PrivateKey, to craft signatures Sign would never write.
func libraryKey(t *testing.T) (plugin.SigningKey, minisign.PrivateKey) {
	t.Helper()
	_, priv, err := minisign.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	text, _ := priv.MarshalText()
	k, err := plugin.ParseSigningKey(text, "")
	if err != nil {
		t.Fatal(err)
	}
	return k, priv
}

func TestVerifySignatureRefusals(t *testing.T) {
	t.Parallel()
	k, priv := libraryKey(t)
	stranger := newKey(t)
	const content = "trusted bytes"
	sum := sha256.Sum256([]byte(content))
	digest := hex.EncodeToString(sum[:])
	stmt := plugin.Statement{Name: "demo", Version: "1", Protocol: 1, OS: "linux", Arch: "amd64", SHA256: digest}

	tests := []struct {
		name   string
		setup  func(t *testing.T, bin string) // writes bin's signature and may change bin
		reason plugin.UntrustedReason
		detail string
	}{
		{name: "unsigned", setup: func(*testing.T, string) {}, reason: plugin.ReasonUnsigned, detail: "obversa plugin sign"},
		{name: "garbage signature", reason: plugin.ReasonMalformed, detail: "invalid minisign signature",
			setup: func(t *testing.T, bin string) { writeSig(t, bin, []byte("not a signature\n")) }},
		{name: "oversized signature file", reason: plugin.ReasonMalformed, detail: "larger than a signature can be",
			setup: func(t *testing.T, bin string) { writeSig(t, bin, bytes.Repeat([]byte("x"), 1<<20)) }},
		{name: "signature is a directory", reason: plugin.ReasonMalformed, detail: "is a directory, not a regular file",
			setup: func(t *testing.T, bin string) {
				if err := os.Mkdir(bin+plugin.SignatureSuffix, 0o755); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "signature is a character device", reason: plugin.ReasonMalformed, detail: "is a character device, not a regular file",
			setup: func(t *testing.T, bin string) {
				if err := os.Symlink(os.DevNull, bin+plugin.SignatureSuffix); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "wrong key", reason: plugin.ReasonUnknownKey, detail: stranger.ID(),
			setup: func(t *testing.T, bin string) {
				sig, _, err := stranger.Sign(bin, stmt)
				if err != nil {
					t.Fatal(err)
				}
				writeSig(t, bin, sig)
			}},
		{name: "binary swapped after signing", reason: plugin.ReasonBadSignature, detail: "does not verify",
			setup: func(t *testing.T, bin string) {
				sig, _, err := k.Sign(bin, stmt)
				if err != nil {
					t.Fatal(err)
				}
				writeSig(t, bin, sig)
				if err := os.WriteFile(bin, []byte("other bytes"), 0o755); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "trusted comment edited", reason: plugin.ReasonBadSignature, detail: "does not verify",
			setup: func(t *testing.T, bin string) {
				sig, _, err := k.Sign(bin, stmt)
				if err != nil {
					t.Fatal(err)
				}
				writeSig(t, bin, bytes.Replace(sig, []byte("version:1"), []byte("version:2"), 1))
			}},
		{name: "statement names another digest", reason: plugin.ReasonDigest, detail: "vouches for sha256 " + strings.Repeat("ab", 32),
			setup: func(t *testing.T, bin string) {
				other := stmt
				other.SHA256 = strings.Repeat("ab", 32)
				writeSig(t, bin, minisign.SignWithComments(priv, []byte(content), other.TrustedComment(), "crafted"))
			}},
		{name: "not a plugin statement", reason: plugin.ReasonMalformed, detail: "not an Obversa plugin statement",
			setup: func(t *testing.T, bin string) {
				writeSig(t, bin, minisign.SignWithComments(priv, []byte(content), "timestamp:1\tfile:x", "crafted"))
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			bin := filepath.Join(t.TempDir(), "bin")
			if err := os.WriteFile(bin, []byte(content), 0o755); err != nil {
				t.Fatal(err)
			}
			tt.setup(t, bin)
			_, err := plugin.VerifySignature(bin, bin+plugin.SignatureSuffix, []plugin.PublicKey{k.PublicKey()})
			var ue *plugin.UntrustedError
			if !errors.As(err, &ue) || !errors.Is(err, plugin.ErrUntrusted) {
				t.Fatalf("VerifySignature = %v, want *UntrustedError", err)
			}
			if errors.Is(err, plugin.ErrNotRegular) {
				t.Errorf("error %q reads as the binary not being a regular file", err)
			}
			if ue.Reason != tt.reason {
				t.Errorf("reason %s, want %s (%v)", ue.Reason, tt.reason, err)
			}
			for _, s := range []string{plugin.CodeUntrusted, bin, tt.detail} {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q lacks %q", err, s)
				}
			}
		})
	}
}

// TestVerifySignatureLegacy accepts a legacy (not pre-hashed) signature
// whose trusted comment is a plugin statement.
func TestVerifySignatureLegacy(t *testing.T) {
	t.Parallel()
	k, priv := libraryKey(t)
	bin, st := writeBinary(t, "legacy")
	sum := sha256.Sum256([]byte("legacy"))
	st.SHA256 = hex.EncodeToString(sum[:])
	writeSig(t, bin, minisign.SignWithComments(priv, []byte("legacy"), st.TrustedComment(), "legacy"))
	v, err := plugin.VerifySignature(bin, bin+plugin.SignatureSuffix, []plugin.PublicKey{k.PublicKey()})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(st, v.Statement); diff != "" {
		t.Errorf("statement (-want +got):\n%s", diff)
	}
}

func TestVerifySignatureMissingBinary(t *testing.T) {
	t.Parallel()
	k := newKey(t)
	bin, st := writeBinary(t, "x")
	sig, _, err := k.Sign(bin, st)
	if err != nil {
		t.Fatal(err)
	}
	writeSig(t, bin, sig)
	if err := os.Remove(bin); err != nil {
		t.Fatal(err)
	}
	if _, err := plugin.VerifySignature(bin, bin+plugin.SignatureSuffix, []plugin.PublicKey{k.PublicKey()}); !errors.Is(err, fs.ErrNotExist) || errors.Is(err, plugin.ErrUntrusted) {
		t.Errorf("VerifySignature(missing binary) = %v, want fs.ErrNotExist", err)
	}
}

func TestBinaryPlatform(t *testing.T) {
	t.Parallel()
	goos, goarch, err := plugin.BinaryPlatform(testBin)
	if err != nil || goos != runtime.GOOS || goarch != runtime.GOARCH {
		t.Errorf("BinaryPlatform(test binary) = %s, %s, %v; want %s/%s", goos, goarch, err, runtime.GOOS, runtime.GOARCH)
	}
	script, _ := markerScript(t)
	if _, _, err := plugin.BinaryPlatform(script); !errors.Is(err, plugin.ErrUnknownPlatform) {
		t.Errorf("BinaryPlatform(script) = %v, want ErrUnknownPlatform", err)
	}
	empty := filepath.Join(t.TempDir(), "empty")
	if err := os.WriteFile(empty, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, _, err := plugin.BinaryPlatform(empty); !errors.Is(err, plugin.ErrUnknownPlatform) {
		t.Errorf("BinaryPlatform(empty) = %v, want ErrUnknownPlatform", err)
	}
}

// TestReferenceToolInterop runs the reference minisign tool, when it is
// installed, on keys and signatures in both directions.
func TestReferenceToolInterop(t *testing.T) {
	t.Parallel()
	tool, err := exec.LookPath("minisign")
	if err != nil {
		t.Skip("the reference minisign tool is not installed")
	}
	dir := t.TempDir()
	k := newKey(t)
	secret, _ := k.MarshalText()
	public, _ := k.PublicKey().MarshalText()
	keyPath, pubPath := filepath.Join(dir, "k.key"), filepath.Join(dir, "k.pub")
	if err := os.WriteFile(keyPath, secret, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pubPath, public, 0o644); err != nil {
		t.Fatal(err)
	}

	// Ours → reference.
	bin, st := writeBinary(t, "signed by obversa")
	sig, _, err := k.Sign(bin, st)
	if err != nil {
		t.Fatal(err)
	}
	writeSig(t, bin, sig)
	out, err := exec.Command(tool, "-V", "-p", pubPath, "-m", bin).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "obversa-plugin:demo") {
		t.Errorf("minisign -V on our signature: %v\n%s", err, out)
	}

	// Reference → ours, with a statement as its trusted comment.
	bin2, st2 := writeBinary(t, "signed by minisign")
	sum := sha256.Sum256([]byte("signed by minisign"))
	st2.SHA256 = hex.EncodeToString(sum[:])
	if out, err := exec.Command(tool, "-S", "-s", keyPath, "-m", bin2, "-t", st2.TrustedComment()).CombinedOutput(); err != nil {
		t.Fatalf("minisign -S: %v\n%s", err, out)
	}
	v, err := plugin.VerifySignature(bin2, bin2+plugin.SignatureSuffix, []plugin.PublicKey{k.PublicKey()})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(st2, v.Statement); diff != "" {
		t.Errorf("statement signed by minisign (-want +got):\n%s", diff)
	}
}
