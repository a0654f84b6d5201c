package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/obversa/obversa/host/watchdog"
)

// TestWorkspaceLeaseEveryProvider: while one run of a run file works, a
// second run of the same file in the same workspace pauses with
// WORKSPACE_LEASE before its worker starts — whatever the provider — so
// the side effect happens once; after the first run ends, resume carries
// the second on.
func TestWorkspaceLeaseEveryProvider(t *testing.T) {
	t.Parallel()
	for _, provider := range []string{"none", "files", "git"} {
		t.Run(provider, func(t *testing.T) {
			t.Parallel()
			runFile, dir, fast := watchdogCase{restart: `max_restarts = 0`, limits: `timeout = "5m"`, slow: "sleep 60"}.write(t)
			text, err := os.ReadFile(runFile)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(runFile, append([]byte("workspace {\n  provider = \""+provider+"\"\n}\n"), text...), 0o644); err != nil {
				t.Fatal(err)
			}
			if provider == "git" {
				gitInit(t, dir)
			}
			first, _ := startRun(t, dir, runFile, "first")
			firstDir := runDirOf(runFile, "first")
			waitAttempts(t, firstDir, 2, "the first run's slow node to start")
			r := obversa(t, dir, "run", "--run-id", "second", runFile)
			if r.code != exitPaused {
				t.Fatalf("second run: exit %d, want %d (paused):\n%s%s", r.code, exitPaused, r.stdout, r.stderr)
			}
			secondDir := runDirOf(runFile, "second")
			if w := recorded(t, secondDir, "graph:run-waiting"); len(w) != 1 || w[0]["code"] != watchdog.CodeWorkspaceLease {
				t.Fatalf("second run waits %v, want %s", w, watchdog.CodeWorkspaceLease)
			}
			if n := len(recorded(t, secondDir, "graph:node-dispatched")); n != 0 {
				t.Errorf("the second run dispatched %d times while the workspace was leased", n)
			}
			if got := effects(t, fast); got != 1 {
				t.Errorf("the side effect happened %d times, want once", got)
			}
			if r := obversa(t, dir, "stop", "--yes", firstDir); r.code != 0 {
				t.Fatalf("stop: exit %d: %s", r.code, r.stderr)
			}
			_ = first.Wait()
			resume := exec.Command(filepath.Join(binDir, "obversa"), "resume", secondDir)
			resume.Dir = dir
			if err := resume.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan struct{})
			go func() { _ = resume.Wait(); close(exited) }()
			t.Cleanup(func() { _ = resume.Process.Kill(); <-exited })
			waitAttempts(t, secondDir, 2, "the resumed second run's slow node to start")
			if got := effects(t, fast); got != 2 {
				t.Errorf("after resume the side effect happened %d times, want twice (once per run)", got)
			}
			if r := obversa(t, dir, "stop", "--yes", secondDir); r.code != 0 {
				t.Fatalf("stop the second run: exit %d: %s", r.code, r.stderr)
			}
			// The resume is the second run's watchdog: stop returns once
			// STOPPED is recorded, while it still cleans up. Killed then,
			// its keeper would take over and write in the run directory
			// as the test's cleanup removes it.
			select {
			case <-exited:
			case <-time.After(60 * time.Second):
				t.Errorf("the resumed second run's watchdog did not exit within 60 s of stop")
			}
		})
	}
}

// gitInit makes dir a git work tree with everything in it committed.
func gitInit(t *testing.T, dir string) {
	t.Helper()
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"-c", "user.email=t@example.invalid", "-c", "user.name=t", "commit", "-qm", "init"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
}
