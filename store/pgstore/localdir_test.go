package pgstore

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/obversa/obversa/store"
)

// TestCreateRunRefusesFileStoreRunDir: a run whose local directory is a
// file-store run's (the same id under the same storage directory) is
// refused before anything is created, and the file run's files are left
// as they were; once the id is free of it, the run is created.
func TestCreateRunRefusesFileStoreRunDir(t *testing.T) {
	t.Parallel()
	b, c := newBackend(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	fs, err := store.Open(c.LocalDir, "ns")
	if err != nil {
		t.Fatal(err)
	}
	rec, err := fs.CreateRun(ctx, "shared", store.Policy{})
	if err != nil {
		t.Fatal(err)
	}
	rec.Close()
	dir := filepath.Join(c.LocalDir, "ns", "runs", "shared")
	before, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.CreateRun(ctx, "shared", store.Policy{})
	if !errors.Is(err, ErrLocalDirInUse) || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "--run-id") {
		t.Fatalf("CreateRun over a file-store run's directory = %v, want ErrLocalDirInUse naming %s and --run-id", err, dir)
	}
	after, err := os.ReadDir(dir)
	if err != nil || len(after) != len(before) {
		t.Errorf("the file run's directory changed: %d entries before, %d after (%v)", len(before), len(after), err)
	}
	if _, err := b.OpenRunReadOnly(ctx, "shared"); !errors.Is(err, store.ErrRunNotFound) {
		t.Errorf("the refused run exists in the database: %v", err)
	}
	r, err := b.CreateRun(ctx, "other", store.Policy{})
	if err != nil {
		t.Fatalf("CreateRun of a free id: %v", err)
	}
	r.Close()
}
