package launch

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

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
		return fmt.Errorf("%w: %v", ErrPluginChanged, err)
	}
	return err
}

// VerifyCached re-hashes a cache entry (docs/plugins.md): bytes that no longer
// match sum wrap ErrPluginChanged (PLUGIN_CHANGED) and name the plugin, the
// path and both digests; a missing entry wraps ErrPluginChanged too. Other
// read errors are returned as they are.
func VerifyCached(name, path, sum string) error {
	got, err := plugin.FileSHA256(path)
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%w: plugin %q: cached binary %s is missing", ErrPluginChanged, name, path)
	}
	if err != nil {
		return err
	}
	if got != sum {
		return fmt.Errorf("%w: plugin %q: cached binary %s has sha256 %s, pinned %s", ErrPluginChanged, name, path, got, sum)
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
