package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestUnwritableRecordAdvice: a paused run's record that this user may
// not write (the run directory and its files without write permission;
// the store opens it read-only) refuses every command that would write it
// — resume, approve, stop, preflight interrupt — with exit 2 and
// RUN_STORAGE, saying nothing was recorded, naming the run directory and
// the fix; the record is unchanged. Under root, whom permissions do not
// stop, the commands run as user nobody.
func TestUnwritableRecordAdvice(t *testing.T) {
	t.Parallel()
	refusedUnwritten(t, "nw", unwritableRunner, func(runDir string) []string {
		return []string{"the record " + runDir + " is not writable by this user", "chmod -R u+w " + runDir}
	})
}

// refusedUnwritten pauses a run (id) at an approval, makes its record
// unwritable with runnerOf, and checks that every command that would
// write it refuses with exit 2, RUN_STORAGE and "nothing was recorded",
// its stderr holding each of wants(runDir) (one of the |-separated
// alternatives), and that the record is unchanged.
func refusedUnwritten(t *testing.T, id string, runnerOf func(*testing.T, string) func(string, ...string) result, wants func(runDir string) []string) {
	t.Helper()
	runFile, dir := rulesRun(t, "", "", "graph \"dag\" {\n  approval = [\"gate\"]\n  node \"gate\" {\n    binding = \"shell\"\n    input = { command = [\"true\"] }\n    retry_safe = true\n  }\n}\n")
	if r := obversa(t, dir, "run", "--run-id", id, runFile); r.code != exitPaused {
		t.Fatalf("run: exit %d: %s", r.code, r.stderr)
	}
	runDir := runDirOf(runFile, id)
	events := filepath.Join(runDir, "events.jsonl")
	before, err := os.ReadFile(events)
	if err != nil {
		t.Fatal(err)
	}
	run := runnerOf(t, runDir)
	for _, args := range [][]string{
		{"resume", runDir},
		{"resume", "--position", "dag/gate/1", runDir},
		{"approve", runDir, "dag/gate/1"},
		{"approve", "--deny", runDir, "dag/gate/1"},
		{"stop", "--yes", runDir},
		{"preflight", "interrupt", runDir},
	} {
		r := run(dir, args...)
		for _, want := range append([]string{"RUN_STORAGE", "nothing was recorded"}, wants(runDir)...) {
			if r.code != exitUsage || !containsOne(r.stderr, strings.Split(want, "|")) {
				t.Errorf("%v on a record it may not write: exit %d, want %d and %q in:\n%s", args, r.code, exitUsage, want, r.stderr)
			}
		}
	}
	if after, err := os.ReadFile(events); err != nil || !bytes.Equal(before, after) {
		t.Fatalf("the record changed (%v)", err)
	}
}

// containsOne reports whether s contains one of subs.
func containsOne(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// unwritableRunner returns a function that runs obversa on the record at
// runDir stripped of write permission: as this user when it is not root
// (readOnlyRunner does that), else as user nobody (setpriv), with the
// directories down to runDir and the built binaries made readable to it.
func unwritableRunner(t *testing.T, runDir string) func(dir string, args ...string) result {
	t.Helper()
	if os.Geteuid() != 0 {
		return readOnlyRunner(t, runDir)
	}
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Skip("a record root may not write needs util-linux's setpriv to run as another user")
	}
	err := filepath.Walk(runDir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Chmod(p, fi.Mode().Perm()&^0o222|0o444)
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range append(ancestors(filepath.Dir(runDir)), binDir) {
		fi, err := os.Stat(d)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(d, fi.Mode().Perm()|0o055); err != nil {
			t.Fatal(err)
		}
	}
	return func(dir string, args ...string) result {
		cmd := exec.Command("setpriv", append([]string{"--reuid=65534", "--regid=65534", "--clear-groups", "--", filepath.Join(binDir, "obversa")}, args...)...)
		cmd.Dir = dir
		return runResult(t, cmd, "obversa as nobody "+strings.Join(args, " "))
	}
}

// ancestors returns dir and each directory above it, up to and not
// including the system's temporary directory.
func ancestors(dir string) []string {
	var out []string
	for d := filepath.Clean(dir); d != os.TempDir() && d != filepath.Dir(d); d = filepath.Dir(d) {
		out = append(out, d)
	}
	return out
}
