package launch

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/obversa/obversa/internal/shellquote"
	"github.com/obversa/obversa/plugin"
)

// CachePath returns where the pinned copy of a binary with digest sum (hex)
// lives: <storage>/plugins/sha256/<hex>.
func CachePath(storageDir, sum string) string {
	return filepath.Join(CacheDir(storageDir), sum)
}

// CacheDir returns the plugin cache of a storage directory:
// <storage>/plugins/sha256.
func CacheDir(storageDir string) string {
	return filepath.Join(storageDir, "plugins", "sha256")
}

// cacheError reports a tampered cache entry as PLUGIN_CHANGED.
func cacheError(err error) error {
	if errors.Is(err, plugin.ErrCacheChanged) {
		return changedError{err}
	}
	return err
}

// changedError is plugin.ErrCacheChanged's refusal as ErrPluginChanged:
// its text, which names the code already, is kept as it is.
type changedError struct{ err error }

func (e changedError) Error() string { return e.err.Error() }

func (e changedError) Unwrap() error { return e.err }

// Is reports whether target is ErrPluginChanged.
func (e changedError) Is(target error) bool { return target == ErrPluginChanged }

// VerifyCached re-hashes a cache entry (docs/plugins.md): bytes that no longer
// match sum wrap ErrPluginChanged (PLUGIN_CHANGED) and name the plugin, the
// path and both digests; a missing entry wraps ErrPluginChanged too. Other
// read errors are returned as they are.
func VerifyCached(name, path, sum string) error {
	f, _, err := OpenCached(name, path, sum, nil)
	if err != nil {
		return err
	}
	return f.Close()
}

// OpenCached opens a cache entry to execute it and makes sure it holds
// sum's bytes (plugin.OpenCached): an entry that still shows stamp is not
// read again, any other is hashed. Errors as VerifyCached's. The caller
// closes the file. The stamp returned vouches for the entry's bytes from
// now on; nil when none can (plugin.StampSettle).
func OpenCached(name, path, sum string, stamp *plugin.FileStamp) (*os.File, *plugin.FileStamp, error) {
	f, vouch, err := plugin.OpenCached(path, sum, stamp)
	var mismatch *plugin.DigestMismatchError
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, nil, fmt.Errorf("%w: plugin %q: cached binary %s is missing", ErrPluginChanged, name, path)
	case errors.As(err, &mismatch):
		return nil, nil, fmt.Errorf("%w: plugin %q: cached binary %s has sha256 %s, pinned %s; remove it (rm %s) and the next run copies the pinned binary there again",
			ErrPluginChanged, name, path, mismatch.Actual, sum, shellquote.Quote(path))
	case err != nil:
		return nil, nil, err
	}
	return f, vouch, nil
}
