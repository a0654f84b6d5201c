package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSymlinkedRunFileNamesItsLockFile: a run file that is a symbolic
// link to one pinned beside its target reads its lock file beside the
// link, in validate and in run alike; validate's "not pinned" warning and
// run's refusal both say so, naming the link's target and the lock file
// beside it that is not read.
func TestSymlinkedRunFileNamesItsLockFile(t *testing.T) {
	t.Parallel()
	runFile := example(t, "quickstart")
	if r := obversa(t, filepath.Dir(runFile), "plugin", "lock", runFile); r.code != 0 {
		t.Fatalf("lock: exit %d: %s", r.code, r.stderr)
	}
	linkDir := t.TempDir()
	link := filepath.Join(linkDir, "run.hcl")
	if err := os.Symlink(runFile, link); err != nil {
		t.Fatal(err)
	}
	note := link + " is a symbolic link to " + runFile + ", and its lock file is read beside the link, in " + linkDir
	notRead := filepath.Join(filepath.Dir(runFile), "obversa.lock.hcl") + " is not read"
	v := obversa(t, linkDir, "validate", link)
	r := obversa(t, linkDir, "run", link)
	for what, out := range map[string]string{"validate": strings.Join(strings.Fields(v.stderr), " "), "run": r.stderr} {
		if !strings.Contains(out, note) || !strings.Contains(out, notRead) {
			t.Errorf("%s of a linked run file: %q; want %q and %q", what, out, note, notRead)
		}
	}
	if !strings.Contains(v.stderr, "Plugin is not pinned") || r.code != exitUsage || !strings.Contains(r.stderr, "plugin is not pinned") {
		t.Errorf("validate: exit %d, %q; run: exit %d, %q; want the warning and the refusal", v.code, v.stderr, r.code, r.stderr)
	}
}
