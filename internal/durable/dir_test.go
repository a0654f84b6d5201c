package durable

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// TestSyncDir: a directory syncs; a missing one is an error naming it.
func TestSyncDir(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := SyncDir(dir); err != nil {
		t.Errorf("SyncDir(%s): %v", dir, err)
	}
	missing := filepath.Join(dir, "missing")
	var pe *fs.PathError
	if err := SyncDir(missing); !errors.Is(err, fs.ErrNotExist) || !errors.As(err, &pe) || pe.Path != missing {
		t.Errorf("SyncDir of a missing directory: %v, want a not-exist error naming it", err)
	}
}
