package launch

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/obversa/obversa/hcl"
	"github.com/obversa/obversa/internal/regfile"
	"github.com/obversa/obversa/plugin"
)

// sidecarSuffixes end the names of files that travel with a plugin binary
// and are never executed: signatures, keys and checksums.
var sidecarSuffixes = []string{plugin.SignatureSuffix, ".sig", ".asc", ".pub", ".key", ".sha256", ".sha256sum", ".sha512", ".sha512sum"}

// IsSidecar reports whether path names a signature, key or checksum file
// (by its suffix, or the name SHA256SUMS) rather than a plugin binary.
func IsSidecar(path string) bool {
	base := strings.ToLower(filepath.Base(path))
	if base == "sha256sums" || base == "sha512sums" {
		return true
	}
	for _, s := range sidecarSuffixes {
		if strings.HasSuffix(base, s) {
			return true
		}
	}
	return false
}

// LoadPublicKey resolves one trusted_keys entry: a minisign public key
// written inline (its base64 line), else the path of a .pub file, relative
// to dir (the run file's directory) unless absolute. An entry that is
// neither returns an error wrapping ErrTrustedKey that names it.
func LoadPublicKey(entry, dir string) (plugin.PublicKey, error) {
	if k, err := plugin.ParsePublicKey([]byte(entry)); err == nil {
		return k, nil
	}
	path := entry
	if !filepath.IsAbs(path) {
		path = filepath.Join(dir, path)
	}
	text, err := regfile.Read(path, maxKeyFileBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return plugin.PublicKey{}, fmt.Errorf("%w: %q is neither a minisign public key (\"RW…\") nor an existing .pub file (%s)", ErrTrustedKey, entry, path)
	}
	if err != nil {
		return plugin.PublicKey{}, fmt.Errorf("%w: %q: %v", ErrTrustedKey, entry, err)
	}
	k, err := plugin.ParsePublicKey(text)
	if err != nil {
		return plugin.PublicKey{}, fmt.Errorf("%w: %s: %v", ErrTrustedKey, path, err)
	}
	return k, nil
}

// maxKeyFileBytes bounds what is read of a .pub file: a minisign public
// key file is two lines, under 200 bytes.
const maxKeyFileBytes = 64 << 10

// TrustedKeyHint says what an entry of trusted_keys may be: the fix a
// refusal of one names.
const TrustedKeyHint = "an entry of trusted_keys is a minisign public key (its RW… line, as `obversa plugin keygen` prints it) or the path of a .pub file, relative to the run file"

// TrustedKeys returns the keys whose signature a plugin needs (docs/plugins.md):
// the plugin's own trusted_keys when it has any, else the run file's;
// nil when neither lists a key, and then no signature is required. A
// plugin's list replaces the run file's, so an operator can restrict a
// plugin to its vendor's key. Errors wrap ErrTrustedKey and name the
// plugin, the list (the run file's or the plugin's), the entry's place in
// the run file (file:line:column, as validate reports it) when the
// decoder recorded it, and what an entry may be.
func TrustedKeys(rf *hcl.RunFile, pl *hcl.Plugin) ([]plugin.PublicKey, error) {
	entries, ranges, whose := rf.TrustedKeys, rf.TrustedKeyRanges, "the run file's trusted_keys"
	if len(pl.TrustedKeys) > 0 {
		entries, ranges, whose = pl.TrustedKeys, pl.Ranges.TrustedKeys, "its own trusted_keys"
	}
	var keys []plugin.PublicKey
	for i, e := range entries {
		k, err := LoadPublicKey(e, rf.Dir)
		if err != nil {
			at := ""
			if i < len(ranges) && ranges[i].Filename != "" {
				at = fmt.Sprintf("%s:%d:%d: ", ranges[i].Filename, ranges[i].Start.Line, ranges[i].Start.Column)
			}
			return nil, fmt.Errorf("%splugin %q: %s: %w; %s", at, pl.Name, whose, err, TrustedKeyHint)
		}
		keys = append(keys, k)
	}
	return keys, nil
}

// Source is what CheckSource established about a plugin's source binary.
type Source struct {
	// SHA256 is the binary's digest (lower-case hex).
	SHA256 string
	// Verified is the signature check, nil when no key was required.
	Verified *plugin.Verified
	// Cached is the verified copy in the plugin cache, the file to execute;
	// empty when CheckSource was given no storage directory.
	Cached string
	// Stamp vouches for Cached's bytes (plugin.Copied.Stamp): set when an
	// existing entry was compared in full with the source, now or, for a
	// Receipted source, when its receipt was written; nil otherwise.
	Stamp *plugin.FileStamp
	// Receipted is true when neither the source nor the entry was read
	// (CheckSourceAgain).
	Receipted bool
}

// CheckSource reads a plugin's source binary once (plugin.CopyBinary):
// it hashes it, verifies its signature (path + ".minisig") against keys
// when keys is not empty, including that the signed statement names this
// platform, and, when storageDir is not empty, places the verified bytes
// in the plugin cache (CachePath), the only copy that is ever executed. The
// digest is compared with expected (when not empty) before the signature
// is looked at, so a swapped binary is reported as a digest mismatch
// naming both digests. Errors name the plugin: ErrSidecar for a path that
// names a signature or checksum file, *plugin.NotRegularError for a
// device, pipe or directory, an fs.ErrNotExist error for a missing binary,
// *plugin.DigestMismatchError, *plugin.UntrustedError (PLUGIN_UNTRUSTED),
// or ErrPluginChanged for a cache entry with other bytes.
func CheckSource(name, path, expected string, keys []plugin.PublicKey, storageDir string) (Source, error) {
	return checkSource(name, path, expected, keys, storageDir, false)
}

// CheckSourceAgain is CheckSource for a source that may have been checked
// into storageDir's cache before: an unsigned, pinned source that, like
// its cache entry, still shows the stamp it showed when both were last
// read in full and found equal is not read again (plugin.CopyOptions.Receipts,
// the receipts in HashedDir; docs/decisions.md, "An unchanged plugin
// source is not hashed again"); any other is read as by CheckSource, and
// one that settled gets a receipt. Errors are CheckSource's.
func CheckSourceAgain(name, path, expected string, keys []plugin.PublicKey, storageDir string) (Source, error) {
	return checkSource(name, path, expected, keys, storageDir, true)
}

// HashedDir returns where a storage directory keeps its hash receipts:
// <storage>/plugins/hashed.
func HashedDir(storageDir string) string {
	return filepath.Join(storageDir, "plugins", "hashed")
}

// checkSource is CheckSource, using storageDir's hash receipts when
// receipts is set.
func checkSource(name, path, expected string, keys []plugin.PublicKey, storageDir string, receipts bool) (Source, error) {
	if IsSidecar(path) {
		return Source{}, fmt.Errorf("%w: plugin %q: %s is a signature, key or checksum file; `path` must name the plugin binary itself", ErrSidecar, name, path)
	}
	o := plugin.CopyOptions{Expected: expected, Keys: keys}
	dir := ""
	if storageDir != "" {
		dir = CacheDir(storageDir)
		if receipts {
			o.Receipts = HashedDir(storageDir)
		}
	}
	c, err := plugin.CopyBinary(name, path, dir, o)
	if err != nil {
		return Source{}, cacheError(err)
	}
	return Source{SHA256: c.SHA256, Verified: c.Verified, Cached: c.Path, Stamp: c.Stamp, Receipted: c.Receipted}, nil
}
