package plugin

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"

	"aead.dev/minisign"
)

// SignatureSuffix is appended to a binary's path to name its detached
// minisign signature: "bin/cmd-engine" is signed by
// "bin/cmd-engine.minisig", the name the reference minisign tool uses.
const SignatureSuffix = ".minisig"

// CodeUntrusted is the docs/cli.md#output-and-exit-status code of a plugin refused for its
// signature.
const CodeUntrusted = "PLUGIN_UNTRUSTED"

// Errors of signature handling (docs/plugins.md). They sit here, beside the code
// that returns them, rather than in errors.go.
var (
	// ErrUntrusted is matched by *UntrustedError: a signature that trusted
	// keys make mandatory is missing, malformed, made by another key,
	// invalid, or vouches for other bytes. Its text is the code
	// PLUGIN_UNTRUSTED.
	ErrUntrusted = errors.New(CodeUntrusted)

	// ErrPublicKey is returned by ParsePublicKey for text that is not a
	// minisign public key.
	ErrPublicKey = errors.New("invalid minisign public key")

	// ErrSigningKey is returned by ParseSigningKey for text that is not a
	// minisign secret key, or an encrypted one the password does not open.
	ErrSigningKey = errors.New("invalid minisign secret key")

	// ErrSignatureFormat is returned by ParseSignature for text that is not
	// a minisign signature.
	ErrSignatureFormat = errors.New("invalid minisign signature")

	// ErrStatement is returned by ParseStatement and Statement.Validate for
	// a trusted comment that is not a valid plugin statement.
	ErrStatement = errors.New("invalid plugin statement")

	// ErrUnknownPlatform is returned by BinaryPlatform when a file is not
	// an executable format it reads, or is built for a machine it does not
	// name.
	ErrUnknownPlatform = errors.New("cannot tell the platform of the binary")

	// ErrChecksumFormat is returned by ParseChecksums for a line that is
	// not a SHA-256 checksum.
	ErrChecksumFormat = errors.New("invalid checksum file")
)

// UntrustedReason says why a signature was not accepted.
type UntrustedReason string

// Reasons of an *UntrustedError.
const (
	// ReasonUnsigned: the signature file does not exist.
	ReasonUnsigned UntrustedReason = "unsigned"
	// ReasonMalformed: the signature file is not a minisign signature, or
	// its trusted comment is not a plugin statement.
	ReasonMalformed UntrustedReason = "malformed"
	// ReasonUnknownKey: the signature was made by a key that is not
	// trusted.
	ReasonUnknownKey UntrustedReason = "unknown-key"
	// ReasonBadSignature: the signature does not verify with the trusted
	// key of its id: the binary's bytes or the trusted comment changed
	// after signing.
	ReasonBadSignature UntrustedReason = "bad-signature"
	// ReasonDigest: the signed statement names another SHA-256 than the
	// binary's.
	ReasonDigest UntrustedReason = "digest"
	// ReasonPlatform: the signed statement names another platform
	// (os/arch) than the machine that is about to run the binary.
	ReasonPlatform UntrustedReason = "platform"
)

// UntrustedError reports a binary whose signature was not accepted. It
// matches ErrUntrusted.
type UntrustedError struct {
	// Path is the binary, SignaturePath its signature file.
	Path          string
	SignaturePath string
	Reason        UntrustedReason
	// Detail says what was found and how to fix it.
	Detail string
	// Err is the underlying error, if any.
	Err error
}

// Error starts with the code PLUGIN_UNTRUSTED and names the binary.
func (e *UntrustedError) Error() string {
	return fmt.Sprintf("%s: binary %s: %s", CodeUntrusted, e.Path, e.Detail)
}

// Is reports whether target is ErrUntrusted.
func (e *UntrustedError) Is(target error) bool { return target == ErrUntrusted }

// Unwrap returns the underlying error.
func (e *UntrustedError) Unwrap() error { return e.Err }

// Signature is a parsed minisign signature file.
type Signature struct {
	// KeyID is the id of the key that made it, 16 upper-case hex digits.
	KeyID string
	// TrustedComment is covered by the signature; UntrustedComment is not
	// and must never be relied on.
	TrustedComment   string
	UntrustedComment string
	// Prehashed is true for the BLAKE2b-512 pre-hashed algorithm ("ED",
	// what minisign ≥ 0.8 and Sign produce) and false for the legacy
	// algorithm ("Ed"), which signs the whole message.
	Prehashed bool

	text []byte
}

// ParseSignature decodes the content of a .minisig file: the untrusted
// comment line, the signature line, the trusted comment line and the
// global signature line. Anything else returns an error wrapping
// ErrSignatureFormat.
func ParseSignature(text []byte) (*Signature, error) {
	var s minisign.Signature
	if err := s.UnmarshalText(text); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSignatureFormat, err)
	}
	if strings.ContainsAny(s.TrustedComment, "\r\n") {
		return nil, fmt.Errorf("%w: the trusted comment spans lines", ErrSignatureFormat)
	}
	return &Signature{
		KeyID:            keyID(s.KeyID),
		TrustedComment:   s.TrustedComment,
		UntrustedComment: s.UntrustedComment,
		Prehashed:        s.Algorithm == minisign.HashEdDSA,
		text:             append([]byte(nil), text...),
	}, nil
}

// Verify reads r to its end and reports whether the signature is valid
// for those bytes and its trusted comment under key, together with the
// SHA-256 (lower-case hex) of the bytes read, so that what was verified
// and what was hashed are the same bytes. A legacy (not pre-hashed)
// signature needs the whole message in memory. It returns the read error,
// if any; a key with another id is simply not valid.
func (s *Signature) Verify(r io.Reader, key PublicKey) (sha string, ok bool, err error) {
	sum := sha256.New()
	tee := io.TeeReader(r, sum)
	if s.Prehashed {
		mr := minisign.NewReader(tee)
		if _, err := io.Copy(io.Discard, mr); err != nil {
			return "", false, err
		}
		return hex.EncodeToString(sum.Sum(nil)), mr.Verify(key.key, s.text), nil
	}
	msg, err := io.ReadAll(tee)
	if err != nil {
		return "", false, err
	}
	return hex.EncodeToString(sum.Sum(nil)), minisign.Verify(key.key, msg, s.text), nil
}

// Verified is what a valid plugin signature proved.
type Verified struct {
	// KeyID is the trusted key that signed, 16 upper-case hex digits.
	KeyID string
	// Statement is the signed trusted comment.
	Statement Statement
	// SHA256 is the digest of the bytes that were verified (lower-case
	// hex); it equals Statement.SHA256.
	SHA256 string
	// Signature is "sha256:<hex>" of the signature file, the value the lock
	// file records.
	Signature string
}

// VerifySignature checks that the binary at binPath carries a valid
// signature at sigPath from one of keys, whose trusted comment is a plugin
// statement naming the binary's SHA-256 (docs/plugins.md). Every refusal is an
// *UntrustedError (ErrUntrusted): no signature file (ReasonUnsigned), a
// malformed file or statement (ReasonMalformed), a key not among keys
// (ReasonUnknownKey), a signature that does not verify
// (ReasonBadSignature), or a statement for other bytes (ReasonDigest).
// Failing to read the binary returns that error (fs.ErrNotExist when it is
// missing, *NotRegularError for a device, pipe or directory). It does not
// check the statement's platform: a release for another machine may be
// verified here; CopyBinary, which prepares a binary to run, does.
func VerifySignature(binPath, sigPath string, keys []PublicKey) (*Verified, error) {
	ts, err := loadSignature(binPath, sigPath, keys)
	if err != nil {
		return nil, err
	}
	f, err := openRegular(binPath)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	actual, ok, err := ts.sig.Verify(f, ts.key)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", binPath, err)
	}
	return ts.result(actual, ok)
}

// trustedSignature is a signature file made by a trusted key, read and
// parsed, before the binary's bytes are checked against it.
type trustedSignature struct {
	binPath, sigPath string
	sig              *Signature
	key              PublicKey
	text             []byte
}

func (t *trustedSignature) untrusted(reason UntrustedReason, err error, format string, args ...any) error {
	return &UntrustedError{Path: t.binPath, SignaturePath: t.sigPath, Reason: reason, Detail: fmt.Sprintf(format, args...), Err: err}
}

// loadSignature reads sigPath and finds the trusted key that made it; the
// refusals are VerifySignature's.
func loadSignature(binPath, sigPath string, keys []PublicKey) (*trustedSignature, error) {
	t := &trustedSignature{binPath: binPath, sigPath: sigPath}
	text, err := readSignatureFile(sigPath)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, t.untrusted(ReasonUnsigned, nil, "no signature %s, but a signature by a trusted key is required; sign it with `obversa plugin sign --key KEY %s`", sigPath, binPath)
	}
	var notRegular *NotRegularError
	if errors.As(err, &notRegular) {
		// Not wrapped: a caller reads a *NotRegularError as the binary's.
		return nil, t.untrusted(ReasonMalformed, nil, "signature %s is %s, not a regular file; a signature is the file `obversa plugin sign` writes beside the binary", sigPath, notRegular.Kind)
	}
	if err != nil {
		return nil, t.untrusted(ReasonUnsigned, err, "reading signature %s: %v", sigPath, err)
	}
	if len(text) > maxSignatureBytes {
		return nil, t.untrusted(ReasonMalformed, nil, "%s is larger than a signature can be (%d bytes)", sigPath, maxSignatureBytes)
	}
	sig, err := ParseSignature(text)
	if err != nil {
		return nil, t.untrusted(ReasonMalformed, err, "%s: %v", sigPath, err)
	}
	trusted := make([]string, 0, len(keys))
	for i := range keys {
		trusted = append(trusted, keys[i].ID())
		if keys[i].ID() == sig.KeyID {
			t.sig, t.key, t.text = sig, keys[i], text
			return t, nil
		}
	}
	return nil, t.untrusted(ReasonUnknownKey, nil, "signed by key %s, which is not trusted (trusted keys: %s)", sig.KeyID, strings.Join(trusted, ", "))
}

// result turns the outcome of Signature.Verify over the binary's bytes
// (their digest actual, and whether the signature verified) into what the
// signature proved, or the refusal.
func (t *trustedSignature) result(actual string, ok bool) (*Verified, error) {
	if !ok {
		return nil, t.untrusted(ReasonBadSignature, nil, "signature %s by key %s does not verify: the binary (sha256 %s) or the signature changed after signing", t.sigPath, t.sig.KeyID, actual)
	}
	st, err := ParseStatement(t.sig.TrustedComment)
	if err != nil {
		return nil, t.untrusted(ReasonMalformed, err, "the trusted comment of %s is not an Obversa plugin statement (%v); sign the binary with `obversa plugin sign`", t.sigPath, err)
	}
	if st.SHA256 != actual {
		return nil, t.untrusted(ReasonDigest, nil, "signature %s vouches for sha256 %s, but the binary has sha256 %s", t.sigPath, st.SHA256, actual)
	}
	sigSum := sha256.Sum256(t.text)
	return &Verified{KeyID: t.sig.KeyID, Statement: st, SHA256: actual, Signature: "sha256:" + hex.EncodeToString(sigSum[:])}, nil
}

// maxSignatureBytes bounds what is read of a signature file: real ones are
// a few hundred bytes; the trusted comment is the only variable part.
const maxSignatureBytes = 64 << 10

// readSignatureFile reads at most maxSignatureBytes+1 bytes of path.
func readSignatureFile(path string) ([]byte, error) {
	f, err := openRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, maxSignatureBytes+1))
}
