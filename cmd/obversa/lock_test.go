package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLockFileTravels: the lock file records plugin paths as the run file
// writes them, relative to the run file, so a checkout moved elsewhere —
// another clone — runs with the same lock file.
func TestLockFileTravels(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	checkout := filepath.Join(base, "checkout")
	copyBinary(t, filepath.Join(binDir, "mock-engine"), filepath.Join(checkout, "bin", "mock-engine"))
	runFile := filepath.Join(checkout, "project", "run.hcl")
	if err := os.MkdirAll(filepath.Dir(runFile), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(runFile, []byte(strings.Replace(jsonRunFile, "BIN/mock-engine", "../bin/mock-engine", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := obversa(t, base, "plugin", "lock", runFile); r.code != 0 {
		t.Fatalf("lock: exit %d: %s", r.code, r.stderr)
	}
	lock := string(mustRead(t, filepath.Join(checkout, "project", "obversa.lock.hcl")))
	if !strings.Contains(lock, `path   = "../bin/mock-engine"`) || strings.Contains(lock, base) {
		t.Fatalf("the lock file does not record the path as the run file writes it:\n%s", lock)
	}
	moved := filepath.Join(base, "elsewhere")
	if err := os.Rename(checkout, moved); err != nil {
		t.Fatal(err)
	}
	movedRun := filepath.Join(moved, "project", "run.hcl")
	if r := obversa(t, base, "plugin", "lock", movedRun); r.code != 0 || !strings.Contains(r.stdout, "(unchanged)") {
		t.Errorf("lock in the moved checkout: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	if r, res := runJSON(t, movedRun, "--run-id", "moved"); r.code != 0 || res["kind"] != "complete" {
		t.Fatalf("run in the moved checkout: exit %d %v: %s", r.code, res, r.stderr)
	}
}
