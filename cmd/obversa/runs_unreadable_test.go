package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunsWithOnlyUnreadableRuns: a storage directory whose only runs
// cannot be read is not reported as holding no runs: stdout says how
// many runs could not be read, and stderr warns about each by name.
func TestRunsWithOnlyUnreadableRuns(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	storage := filepath.Join(dir, ".obversa")
	for i, id := range []string{"r1", "r2"} {
		runDir := filepath.Join(storage, "default", "runs", id)
		if err := os.MkdirAll(runDir, 0o755); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			if err := os.WriteFile(filepath.Join(runDir, "events.jsonl"), []byte("garbage\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		} else if err := os.Symlink("/dev/null", filepath.Join(runDir, "events.jsonl")); err != nil {
			t.Fatal(err)
		}
		r := obversa(t, dir, "runs", "--storage", storage)
		want := "no runs to list: 1 run cannot be read (see the warning)"
		if i == 1 {
			want = "no runs to list: 2 runs cannot be read (see the warnings)"
		}
		if r.code != 0 || strings.TrimSpace(r.stdout) != want {
			t.Errorf("runs with %d unreadable: exit %d, stdout %q, want %q", i+1, r.code, r.stdout, want)
		}
		for _, w := range []string{"r1", "r2"}[:i+1] {
			if !strings.Contains(r.stderr, "warning: run "+w+" cannot be read") {
				t.Errorf("runs: stderr %q, want a warning naming %s", r.stderr, w)
			}
		}
	}
}
