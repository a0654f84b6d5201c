package launch

import "errors"

var (
	// ErrConfig is returned when a plugin's Configure answers with an
	// error-severity diagnostic.
	ErrConfig = errors.New("plugin configuration refused")
	// ErrPluginChanged is returned when a cached binary no longer matches
	// its digest, or is missing. Code PLUGIN_CHANGED (DESIGN §8).
	ErrPluginChanged = errors.New("PLUGIN_CHANGED")
	// ErrType is returned when a plugin does not serve the type the run file
	// declares.
	ErrType = errors.New("plugin does not serve its declared type")
	// ErrTrustedKey is returned by LoadPublicKey and TrustedKeys for a
	// trusted_keys entry that is neither a minisign public key nor a
	// readable .pub file.
	ErrTrustedKey = errors.New("invalid trusted key")
	// ErrSidecar is returned by CheckSource for a path that names a
	// signature, key or checksum file: such a file is never executed.
	ErrSidecar = errors.New("not a plugin binary")
	// ErrInstall is returned by Install for a source it cannot install: no
	// or several plugin binaries, an unsafe archive, a binary for another
	// platform, a signed name that differs from the file name, a checksum
	// sidecar that disagrees, or a version already installed with other
	// bytes.
	ErrInstall = errors.New("cannot install plugin")
)
