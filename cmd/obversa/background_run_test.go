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
	"github.com/obversa/obversa/internal/testutil"
)

// marked lists the live processes carrying the run's owner marker.
func marked(t *testing.T, runDir string) []proc.Proc {
	t.Helper()
	ps, err := proc.Marked(launch.OwnerEnv+"="+watchdog.OwnerMarker(runDir), nil)
	if err != nil {
		t.Fatal(err)
	}
	return ps
}

// keeperWith returns the pid of the `obversa keeper` whose command line
// contains every one of parts, 0 if none.
func keeperWith(t *testing.T, parts ...string) int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
next:
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		if args := strings.Split(string(b), "\x00"); len(args) < 2 || args[1] != "keeper" {
			continue
		}
		for _, p := range parts {
			if !strings.Contains(string(b), p) {
				continue next
			}
		}
		return pid
	}
	return 0
}

// startRun starts `obversa run` in the background.
func startRun(t *testing.T, dir, runFile, id string, env ...string) (*exec.Cmd, *testutil.SyncBuffer) {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "obversa"), "run", "--run-id", id, runFile)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var errb testutil.SyncBuffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd, &errb
}

// waitFor polls cond every 20 ms for up to d.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitAttempts waits up to 30 s for the run at runDir to record n
// attempt starts (what names what it waits for).
func waitAttempts(t *testing.T, runDir string, n int, what string) {
	t.Helper()
	waitFor(t, 30*time.Second, what, func() bool {
		if _, err := os.Stat(filepath.Join(runDir, "events.jsonl")); err != nil {
			return false
		}
		return len(recorded(t, runDir, "graph:node-attempt-started")) == n
	})
}

func exitCode(err error) int {
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	return 0
}
