//go:build unix

package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/obversa/obversa/internal/regfile"
)

// TestRecordFilesAreNotFollowed: a run directory whose events.jsonl, or
// whose lock, is a symbolic link to another run's file is refused by the
// read-only and the writable open alike, naming the link and the fix,
// and the file the link names is left as it was (no append through it).
func TestRecordFilesAreNotFollowed(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	other := filepath.Join(root, "other")
	if err := os.Mkdir(other, 0o755); err != nil {
		t.Fatal(err)
	}
	r, err := OpenRunDir(ctx, other, Policy{})
	if err != nil {
		t.Fatal(err)
	}
	own, err := r.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Append(ctx, 0, NewEvent{Type: "test:linked"}); err != nil {
		t.Fatal(err)
	}
	own.Release()
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(filepath.Join(other, eventsFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, linked := range []string{eventsFile, lockFile} {
		t.Run(linked, func(t *testing.T) {
			dir := filepath.Join(root, "linked-"+linked)
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if linked == lockFile {
				// A record of its own, so only the lock is a link.
				if err := os.WriteFile(filepath.Join(dir, eventsFile), nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.Symlink(filepath.Join(other, linked), filepath.Join(dir, linked)); err != nil {
				t.Fatal(err)
			}
			opens := map[string]func() error{
				"read-only": func() error { _, err := OpenRunDirReadOnly(ctx, dir); return err },
				"writable":  func() error { r, err := OpenRunDir(ctx, dir, Policy{}); closeIf(r); return err },
			}
			if linked == lockFile {
				// The lock is opened when the run is taken.
				opens = map[string]func() error{"lock": func() error {
					r, err := OpenRunDir(ctx, dir, Policy{})
					if err != nil {
						return err
					}
					defer closeIf(r)
					own, err := r.Lock(ctx)
					if err == nil {
						own.Release()
					}
					return err
				}}
			}
			for name, open := range opens {
				err := open()
				var nr *regfile.NotRegularError
				if !errors.As(err, &nr) || nr.Kind != "a symbolic link" {
					t.Errorf("%s open: %v, want a refusal of a symbolic link", name, err)
					continue
				}
				if msg := err.Error(); !strings.Contains(msg, filepath.Join(dir, linked)) || !strings.Contains(msg, "cp --remove-destination") {
					t.Errorf("%s open: %q, want it to name the link and the fix", name, msg)
				}
			}
		})
	}
	after, err := os.ReadFile(filepath.Join(other, eventsFile))
	if err != nil {
		t.Fatal(err)
	}
	if string(after) != string(before) {
		t.Errorf("the linked record changed:\n%s\nwas\n%s", after, before)
	}
}
