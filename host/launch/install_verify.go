package launch

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/obversa/obversa/internal/regfile"
	"github.com/obversa/obversa/plugin"
)

// checkStaged verifies the staged binary's signature: against keys when
// given, otherwise only its form and digest.
func checkStaged(bin, sigPath string, keys []plugin.PublicKey) (*plugin.Verified, error) {
	if len(keys) > 0 {
		return plugin.VerifySignature(bin, sigPath, keys)
	}
	untrusted := func(reason plugin.UntrustedReason, err error, detail string) error {
		return &plugin.UntrustedError{Path: bin, SignaturePath: sigPath, Reason: reason, Detail: detail, Err: err}
	}
	text, err := regfile.Read(sigPath, maxKeyFileBytes)
	if err != nil {
		return nil, untrusted(plugin.ReasonUnsigned, err, "the source has no signature "+filepath.Base(sigPath))
	}
	sig, err := plugin.ParseSignature(text)
	if err != nil {
		return nil, untrusted(plugin.ReasonMalformed, err, err.Error())
	}
	st, err := plugin.ParseStatement(sig.TrustedComment)
	if err != nil {
		return nil, untrusted(plugin.ReasonMalformed, err, "the trusted comment is not a plugin statement: "+err.Error())
	}
	actual, err := plugin.FileSHA256(bin)
	if err != nil {
		return nil, err
	}
	if st.SHA256 != actual {
		return nil, untrusted(plugin.ReasonDigest, nil, fmt.Sprintf("the signature vouches for sha256 %s, but the binary has sha256 %s", st.SHA256, actual))
	}
	return &plugin.Verified{Statement: st, SHA256: actual}, nil
}

// checkSums compares the binary's digest with the checksum sidecars the
// source carries, if any.
func checkSums(found *staged, staging, actual string) error {
	for _, side := range []struct{ file, entry string }{
		{found.binary + ".sha256", ""},
		{checksumsFile, found.binary},
	} {
		if !found.has[side.file] {
			continue
		}
		text, err := os.ReadFile(filepath.Join(staging, side.file))
		if err != nil {
			return err
		}
		sums, err := plugin.ParseChecksums(text)
		if err != nil {
			return fmt.Errorf("%w: %s: %v", ErrInstall, side.file, err)
		}
		want, ok := sums[side.entry]
		if !ok && side.entry == "" {
			want, ok = sums[found.binary]
		}
		if !ok {
			if side.file == checksumsFile {
				continue // a release-wide file may not list this binary
			}
			return fmt.Errorf("%w: %s does not list %s", ErrInstall, side.file, found.binary)
		}
		if want != actual {
			return &plugin.DigestMismatchError{Name: found.binary, Path: side.file, Expected: want, Actual: actual}
		}
	}
	return nil
}
