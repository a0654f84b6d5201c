package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/obversa/obversa/host/launch"
	"github.com/obversa/obversa/host/watchdog"
	"github.com/obversa/obversa/internal/proc"
)

// TestKeeperLeavesARunItsWatchdogReleased: a run pauses and its watchdog
// exits having stopped everything of the run, and in that moment the next
// watchdog of the run (here a stand-in: a process carrying the run's owner
// marker, as a resume's worker and plugins do) is already starting. The
// keeper of the watchdog that ended must leave it alone: before the fix it
// froze and stopped it and took the run's lock to record run:cleanup, so a
// resume or approve started then was refused PROCESS_LOCKED naming the
// keeper. The test holds the keeper's pipe open (a second write end,
// opened through /proc) until the stand-in runs, so the keeper wakes only
// after it, whatever the machine's load; then approve carries the run on.
func TestKeeperLeavesARunItsWatchdogReleased(t *testing.T) {
	t.Parallel()
	gate := filepath.Join(t.TempDir(), "gate")
	body := `graph "dag" {
  approval = ["b"]
  node "a" {
    binding = "shell"
    input   = { command = ["sh", "-c", "while [ ! -e GATE ]; do sleep 0.05; done"] }
  }
  node "b" {
    depends_on = ["a"]
    binding    = "shell"
    input      = { command = ["true"] }
  }
}
`
	runFile, dir := rulesRun(t, "", "", strings.ReplaceAll(body, "GATE", gate))
	runDir := runDirOf(runFile, "rel")
	run, errb := startRun(t, dir, runFile, "rel")
	var keeper int
	waitFor(t, 60*time.Second, "the run's keeper", func() bool {
		keeper = keeperWith(t, "\x00--run-dir\x00"+runDir+"\x00")
		return keeper != 0
	})
	// A write end of the keeper's pipe of the test's own: the keeper is
	// still waiting for the pipe's end in its first program start.
	hold, err := os.OpenFile("/proc/"+strconv.Itoa(keeper)+"/fd/0", os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Close()
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run.Wait(); exitCode(err) != exitPaused {
		t.Fatalf("run: %v, want exit %d: %s", err, exitPaused, errb.String())
	}
	next := exec.Command("sleep", "600")
	next.Env = append(os.Environ(), launch.OwnerEnv+"="+watchdog.OwnerMarker(runDir))
	if err := next.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = next.Process.Kill(); _ = next.Wait() })
	hold.Close()
	waitFor(t, 60*time.Second, "the keeper to end, or to stop the next watchdog's process", func() bool {
		return exited(keeper) || touched(next.Process.Pid)
	})
	if touched(next.Process.Pid) {
		t.Fatalf("the keeper of the watchdog that ended stopped a process of the run's next watchdog (keeper.log: %s)", readOr(filepath.Join(runDir, watchdog.KeeperLog)))
	}
	if _, err := os.Stat(filepath.Join(runDir, watchdog.KeeperLog)); err == nil {
		t.Errorf("the keeper acted on a run its watchdog released: %s", readOr(filepath.Join(runDir, watchdog.KeeperLog)))
	}
	if n := len(recorded(t, runDir, "run:cleanup")); n != 1 {
		t.Errorf("%d run:cleanup events, want 1 (the watchdog's own)", n)
	}
	// approve, as a resume would, stops the stand-in before it takes the
	// run over and carries the run on.
	if r := obversa(t, dir, "approve", runDir, "dag/b/1"); r.code != 0 {
		t.Fatalf("approve right after the run paused: exit %d: %s", r.code, r.stderr)
	}
	if st := status(t, runDir); st.Phase != "completed" {
		t.Errorf("phase %q, want completed", st.Phase)
	}
}

// touched reports whether pid was frozen or has ended.
func touched(pid int) bool {
	i, err := proc.Read(pid)
	return err != nil || !i.Alive() || i.State == 'T'
}

// readOr returns the file's text, or the error reading it.
func readOr(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	return string(b)
}
