package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestReadersOfRunLockNotAFile: the read-only commands agree on a run
// whose lock is a directory or a named pipe: status, like events and
// show, which never read the lock, reports the run (no process can hold
// such a lock, so it has no owner) with a lock: line naming the fix;
// resume, a writer, refuses naming the same fix.
func TestReadersOfRunLockNotAFile(t *testing.T) {
	t.Parallel()
	runFile, dir := gateRun(t)
	for _, kind := range []string{"directory", "named pipe"} {
		runDir := runDirOf(runFile, "lk-"+strings.ReplaceAll(kind, " ", "-"))
		if err := exec.Command("cp", "-a", runDirOf(runFile, "gate"), runDir).Run(); err != nil {
			t.Fatal(err)
		}
		lock := filepath.Join(runDir, "lock")
		if err := os.Remove(lock); err != nil {
			t.Fatal(err)
		}
		var err error
		if kind == "directory" {
			err = os.Mkdir(lock, 0o755)
		} else {
			err = syscall.Mkfifo(lock, 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
		fix := "rm -r " + lock
		for _, cmd := range []string{"status", "events", "show"} {
			r := obversa(t, dir, cmd, runDir)
			if r.code != 0 && r.code != exitPaused {
				t.Errorf("lock a %s: obversa %s: exit %d: %s", kind, cmd, r.code, r.stderr)
			}
			if cmd == "status" && !strings.Contains(r.stdout, "lock:") || cmd == "status" && !strings.Contains(r.stdout, fix) {
				t.Errorf("lock a %s: status does not say %q on a lock: line:\n%s", kind, fix, r.stdout)
			}
		}
		if r := obversa(t, dir, "status", "--json", runDir); !strings.Contains(r.stdout, `"lock_note"`) {
			t.Errorf("lock a %s: status --json has no lock_note:\n%s", kind, r.stdout)
		}
		if r := obversa(t, dir, "resume", runDir); r.code == 0 || !strings.Contains(r.stderr, fix) {
			t.Errorf("lock a %s: resume: exit %d, want a refusal naming %q: %s", kind, r.code, fix, r.stderr)
		}
	}
}
