package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestHintsQuoteTheRunDirectory: a run kept under a directory with a
// space, a single quote and a $ prints copy-paste commands a shell runs as
// printed (docs/cli.md, "Copy-paste commands"): the `next:` line of the
// paused run approves it and carries it on, and both commands of the
// `inspect:` line of its result read the run.
func TestHintsQuoteTheRunDirectory(t *testing.T) {
	t.Parallel()
	storage := filepath.Join(t.TempDir(), "sp ace", "it's $x")
	runFile := example(t, "quickstart", `directory = ".obversa"`, fmt.Sprintf("directory = %q", storage),
		"global_concurrency = 2", "global_concurrency = 2\n  approval = [\"draft\"]")
	dir := filepath.Dir(runFile)
	r := obversa(t, dir, "run", "--lock", "--run-id", "s2", runFile)
	if r.code != exitPaused {
		t.Fatalf("run: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	next := hintLine(t, r.stdout, "next: ")
	approve, _, _ := strings.Cut(next, "   (or")
	if !strings.HasPrefix(approve, "obversa approve ") {
		t.Fatalf("next: %q is not an approve", next)
	}
	a := shellRun(t, dir, approve)
	if a.code != 0 || !strings.Contains(a.stdout, "complete: ") {
		t.Fatalf("sh -c %q: exit %d: %s%s", approve, a.code, a.stdout, a.stderr)
	}
	inspect := strings.Split(hintLine(t, a.stdout, "inspect: "), "   ")
	if len(inspect) != 2 {
		t.Fatalf("inspect: %q is not two commands", inspect)
	}
	for _, c := range inspect {
		if s := shellRun(t, dir, c); s.code != 0 || !strings.Contains(s.stdout, "draft") {
			t.Errorf("sh -c %q: exit %d: %s%s", c, s.code, s.stdout, s.stderr)
		}
	}
}

// hintLine returns what follows prefix on the first line of out that
// holds it, trimmed.
func hintLine(t *testing.T, out, prefix string) string {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		if _, after, ok := strings.Cut(line, prefix); ok {
			return strings.TrimSpace(after)
		}
	}
	t.Fatalf("no %q line in:\n%s", prefix, out)
	return ""
}

// shellRun runs command with sh -c in dir, with the test's obversa first
// on PATH and $x set, so that a directory the shell expanded would differ.
func shellRun(t *testing.T, dir, command string) result {
	t.Helper()
	cmd := exec.Command("sh", "-c", command)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PATH="+binDir+string(os.PathListSeparator)+os.Getenv("PATH"), "x=expanded")
	return runResult(t, cmd, "sh -c "+command)
}
