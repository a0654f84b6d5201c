package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEmptyRecordNamesFix: a run whose record holds no event (cut off
// while it was created) is refused by every command that folds it naming
// the run directory and the fix: remove it and run again.
func TestEmptyRecordNamesFix(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	runDir := filepath.Join(dir, ".obversa", "default", "runs", "empty")
	if err := os.MkdirAll(runDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(runDir, "events.jsonl"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"status", runDir},
		{"show", runDir},
		{"graph", runDir},
		{"approve", runDir, "dag/c/1"},
		{"resume", runDir},
	} {
		r := obversa(t, dir, args...)
		if r.code == 0 || !strings.Contains(r.stderr, "rm -r "+runDir) || !strings.Contains(r.stderr, "obversa run") {
			t.Errorf("obversa %s of an empty record: exit %d, stderr %q; want a refusal naming rm -r %s", args[0], r.code, r.stderr, runDir)
		}
	}
}
