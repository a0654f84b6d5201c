package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEventStreamIsADirectory: an events.jsonl that is a directory is a
// storage error (RUN_STORAGE) naming the path once, by the read-only
// and the writable open alike.
func TestEventStreamIsADirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "r1")
	record := filepath.Join(dir, "events.jsonl")
	if err := os.MkdirAll(record, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, open := range map[string]func() error{
		"read-only": func() error { _, err := OpenRunDirReadOnly(context.Background(), dir); return err },
		"writable":  func() error { r, err := OpenRunDir(context.Background(), dir, Policy{}); closeIf(r); return err },
	} {
		err := open()
		var se *StorageError
		if !errors.As(err, &se) {
			t.Errorf("%s: %v, want a *StorageError", name, err)
			continue
		}
		if msg := err.Error(); strings.Count(msg, record) != 1 || !strings.Contains(msg, "is a directory") {
			t.Errorf("%s: %q, want it to name %s once and say it is a directory", name, msg, record)
		}
	}
}

// closeIf closes r when it is open.
func closeIf(r *Run) {
	if r != nil {
		_ = r.Close()
	}
}
