package launch

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/obversa/obversa/plugin"
)

// CachePath returns where the pinned copy of a binary with digest sum (hex)
// lives: <storage>/plugins/sha256/<hex>.
func CachePath(storageDir, sum string) string {
	return filepath.Join(storageDir, "plugins", "sha256", sum)
}

// Cache copies the binary at src into the plugin cache under its digest and
// returns the cached path. The copy is written to a temporary file, synced,
// checked against sum, made read-only and renamed into place, so a reader
// never sees a partial binary. An existing entry is re-hashed and reused;
// one whose bytes no longer match returns an error wrapping
// ErrPluginChanged. src must itself hash to sum (plugin.DigestMismatchError
// otherwise).
func Cache(storageDir, name, src, sum string) (string, error) {
	dst := CachePath(storageDir, sum)
	if _, err := os.Stat(dst); err == nil {
		return dst, VerifyCached(name, dst, sum)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return "", err
	}
	in, err := os.Open(src)
	if err != nil {
		return "", fmt.Errorf("plugin %q: %w", name, err)
	}
	defer in.Close()
	tmp, err := os.CreateTemp(filepath.Dir(dst), ".tmp-*")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	if _, err := io.Copy(tmp, in); err != nil {
		tmp.Close()
		return "", err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return "", err
	}
	if err := tmp.Close(); err != nil {
		return "", err
	}
	got, err := plugin.FileSHA256(tmp.Name())
	if err != nil {
		return "", err
	}
	if got != sum {
		return "", &plugin.DigestMismatchError{Name: name, Path: src, Expected: sum, Actual: got}
	}
	if err := os.Chmod(tmp.Name(), 0o555); err != nil {
		return "", err
	}
	if err := os.Rename(tmp.Name(), dst); err != nil {
		return "", err
	}
	return dst, syncDir(filepath.Dir(dst))
}

// VerifyCached re-hashes a cache entry (DESIGN §7): bytes that no longer
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
