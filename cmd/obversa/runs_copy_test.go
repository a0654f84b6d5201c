package main

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestRunsListsACopiedRunDirectoryOnce: a copy of a run directory (cp -a
// runs/X runs/X-backup, as a backup) holds run X's record; `runs` lists
// it under its directory's name, what commands take as RUN, not as a
// second row of X, and warns that it is a copy.
func TestRunsListsACopiedRunDirectoryOnce(t *testing.T) {
	t.Parallel()
	runFile, dir := rulesRun(t, "", "", "graph \"dag\" {\n  node \"a\" {\n    binding = \"shell\"\n    input = { command = [\"true\"] }\n  }\n}\n")
	if r := obversa(t, dir, "run", "--run-id", "orig", runFile); r.code != 0 {
		t.Fatalf("run: exit %d: %s", r.code, r.stderr)
	}
	runDir := runDirOf(runFile, "orig")
	backup := filepath.Join(filepath.Dir(runDir), "orig-backup")
	if out, err := exec.Command("cp", "-a", runDir, backup).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v: %s", err, out)
	}
	r := obversa(t, dir, "runs", "--storage", filepath.Join(dir, ".obversa"))
	if r.code != 0 {
		t.Fatalf("runs: exit %d: %s", r.code, r.stderr)
	}
	for _, name := range []string{"orig", "orig-backup"} {
		if n := len(regexp.MustCompile(`(?m)^`+name+` +completed `).FindAllString(r.stdout, -1)); n != 1 {
			t.Errorf("runs lists %s %d times, want once:\n%s", name, n, r.stdout)
		}
	}
	if want := "warning: run directory " + backup + " holds the record of run orig (a copy of its directory)"; !strings.Contains(r.stderr, want) {
		t.Errorf("runs: stderr %q; want %q", r.stderr, want)
	}
}
