package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadOnlyRecordNothingRecorded: every command that would write a
// paused run's record (resume, approve, stop, preflight interrupt) fails
// on a record it may not write — a read-only mount, or for a user other
// than root a directory without write permission — and says that nothing
// was recorded; the record is unchanged.
func TestReadOnlyRecordNothingRecorded(t *testing.T) {
	t.Parallel()
	runFile, dir := rulesRun(t, "", "", "graph \"dag\" {\n  approval = [\"gate\"]\n  node \"gate\" {\n    binding = \"shell\"\n    input = { command = [\"true\"] }\n    retry_safe = true\n  }\n}\n")
	if r := obversa(t, dir, "run", "--run-id", "ro", runFile); r.code != exitPaused {
		t.Fatalf("run: exit %d: %s", r.code, r.stderr)
	}
	runDir := runDirOf(runFile, "ro")
	events := filepath.Join(runDir, "events.jsonl")
	before, err := os.ReadFile(events)
	if err != nil {
		t.Fatal(err)
	}
	readOnly := readOnlyRunner(t, runDir)
	for _, args := range [][]string{
		{"resume", runDir},
		{"resume", "--position", "dag/gate/1", runDir},
		{"approve", runDir, "dag/gate/1"},
		{"approve", "--deny", runDir, "dag/gate/1"},
		{"stop", "--yes", runDir},
		{"preflight", "interrupt", runDir},
	} {
		r := readOnly(dir, args...)
		if r.code == 0 || !strings.Contains(r.stderr, "RUN_STORAGE") || !strings.Contains(r.stderr, "nothing was recorded") {
			t.Errorf("%v on a read-only record: exit %d, stderr %q; want RUN_STORAGE saying nothing was recorded", args, r.code, r.stderr)
		}
	}
	if after, err := os.ReadFile(events); err != nil || !bytes.Equal(before, after) {
		t.Fatalf("the record changed (%v)", err)
	}
}

// readOnlyRunner returns a function that runs obversa with runDir
// read-only: under root, in a mount namespace where runDir is bound
// read-only (util-linux's unshare); otherwise with runDir and its files
// stripped of write permission until the test ends.
func readOnlyRunner(t *testing.T, runDir string) func(dir string, args ...string) result {
	t.Helper()
	if os.Geteuid() != 0 {
		var modes []func()
		err := filepath.Walk(runDir, func(p string, fi os.FileInfo, err error) error {
			if err != nil {
				return err
			}
			mode := fi.Mode().Perm()
			modes = append(modes, func() { _ = os.Chmod(p, mode) })
			return os.Chmod(p, mode&^0o222)
		})
		t.Cleanup(func() {
			for i := len(modes) - 1; i >= 0; i-- {
				modes[i]()
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		return func(dir string, args ...string) result { return obversa(t, dir, args...) }
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("a read-only record under root needs util-linux's unshare")
	}
	return func(dir string, args ...string) result {
		script := `mount --bind -o ro "$1" "$1" && shift && exec "$@"`
		cmd := exec.Command("unshare", append([]string{"--mount", "--propagation", "private", "--", "sh", "-c", script, "sh", runDir, filepath.Join(binDir, "obversa")}, args...)...)
		cmd.Dir = dir
		return runResult(t, cmd, fmt.Sprintf("obversa %v", args))
	}
}
