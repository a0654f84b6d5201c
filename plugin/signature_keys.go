package plugin

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"

	"aead.dev/minisign"
)

// PublicKey is a minisign (Ed25519) public key that may vouch for plugin
// binaries.
type PublicKey struct {
	key minisign.PublicKey
}

// ParsePublicKey decodes a minisign public key given either as its base64
// line ("RWQ…", what trusted_keys holds) or as the content of a .pub file
// (an "untrusted comment:" line, then the base64 line). Surrounding space
// is ignored. Other text returns an error wrapping ErrPublicKey.
func ParsePublicKey(text []byte) (PublicKey, error) {
	text = bytes.TrimSpace(text)
	lines := bytes.Split(text, []byte("\n"))
	switch {
	case len(lines) == 2 && bytes.HasPrefix(lines[0], []byte("untrusted comment:")):
		text = bytes.TrimSpace(lines[1])
	case len(lines) != 1:
		return PublicKey{}, fmt.Errorf("%w: expected one base64 line, optionally after an untrusted comment line", ErrPublicKey)
	}
	if len(text) == 0 || bytes.ContainsAny(text, " \t\r") {
		return PublicKey{}, fmt.Errorf("%w: expected one base64 line", ErrPublicKey)
	}
	var k minisign.PublicKey
	if err := k.UnmarshalText(text); err != nil {
		return PublicKey{}, fmt.Errorf("%w: %v", ErrPublicKey, err)
	}
	return PublicKey{key: k}, nil
}

// ID returns the key id as minisign shows it: 16 upper-case hex digits.
func (k PublicKey) ID() string { return keyID(k.key.ID()) }

// String returns the base64 line of the key, the form trusted_keys
// accepts.
func (k PublicKey) String() string { return k.key.String() }

// MarshalText returns the content of a .pub file in the reference
// minisign format: an untrusted comment naming the key id, the base64
// line, and a final newline.
func (k PublicKey) MarshalText() ([]byte, error) {
	return []byte("untrusted comment: minisign public key " + k.ID() + "\n" + k.String() + "\n"), nil
}

// Equal reports whether k and x are the same key.
func (k PublicKey) Equal(x PublicKey) bool { return k.key.Equal(x.key) }

func keyID(id uint64) string { return fmt.Sprintf("%016X", id) }

// SigningKey is a minisign secret key used by `obversa plugin sign`.
type SigningKey struct {
	key minisign.PrivateKey
}

// GenerateSigningKey returns a new random key pair. It returns the error of
// the system's random source.
func GenerateSigningKey() (SigningKey, error) {
	_, priv, err := minisign.GenerateKey(nil)
	if err != nil {
		return SigningKey{}, err
	}
	return SigningKey{key: priv}, nil
}

// ParseSigningKey decodes a minisign secret key file. An encrypted key
// (the reference tool's default) is opened with password; an unencrypted
// one (minisign -W, or MarshalText) ignores it. Text that is not a key, or
// a wrong password, returns an error wrapping ErrSigningKey.
func ParseSigningKey(text []byte, password string) (SigningKey, error) {
	text = bytes.TrimSpace(text)
	if minisign.IsEncrypted(text) {
		if password == "" {
			return SigningKey{}, fmt.Errorf("%w: the key is encrypted; give its password", ErrSigningKey)
		}
		k, err := minisign.DecryptKey(password, text)
		if err != nil {
			return SigningKey{}, fmt.Errorf("%w: decrypting: %v (wrong password?)", ErrSigningKey, err)
		}
		return SigningKey{key: k}, nil
	}
	var k minisign.PrivateKey
	if err := k.UnmarshalText(text); err != nil {
		return SigningKey{}, fmt.Errorf("%w: %v", ErrSigningKey, err)
	}
	return SigningKey{key: k}, nil
}

// MarshalText returns the key as an unencrypted minisign secret key file,
// the format of `minisign -G -W`. Keep it private (mode 0600).
func (k SigningKey) MarshalText() ([]byte, error) { return k.key.MarshalText() }

// Encrypt returns the key as a password-protected minisign secret key file
// (scrypt with the reference tool's parameters, which take about a GiB of
// memory and a few seconds).
func (k SigningKey) Encrypt(password string) ([]byte, error) {
	return minisign.EncryptKey(password, k.key)
}

// ID returns the key id: 16 upper-case hex digits.
func (k SigningKey) ID() string { return keyID(k.key.ID()) }

// PublicKey returns the public half of k.
func (k SigningKey) PublicKey() PublicKey {
	return PublicKey{key: k.key.Public().(minisign.PublicKey)}
}

// Sign signs the file at path with a pre-hashed (BLAKE2b-512) minisign
// signature whose trusted comment is st with SHA256 filled in, reading the
// file once for both digests. If st.SHA256 is already set and differs from
// the file's, it returns a *DigestMismatchError. st must otherwise be
// valid (ErrStatement). It returns the content of the .minisig file and
// the statement that was signed.
func (k SigningKey) Sign(path string, st Statement) ([]byte, Statement, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, st, err
	}
	defer f.Close()
	sum := sha256.New()
	r := minisign.NewReader(io.TeeReader(f, sum))
	if _, err := io.Copy(io.Discard, r); err != nil {
		return nil, st, fmt.Errorf("reading %s: %w", path, err)
	}
	actual := hex.EncodeToString(sum.Sum(nil))
	if st.SHA256 != "" && st.SHA256 != actual {
		return nil, st, &DigestMismatchError{Name: st.Name, Path: path, Expected: st.SHA256, Actual: actual}
	}
	st.SHA256 = actual
	if err := st.Validate(); err != nil {
		return nil, st, err
	}
	untrusted := fmt.Sprintf("signature from minisign secret key %s: obversa plugin %s %s", k.ID(), st.Name, st.Version)
	return r.SignWithComments(k.key, st.TrustedComment(), untrusted), st, nil
}
