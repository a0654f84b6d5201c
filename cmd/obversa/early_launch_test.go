package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/obversa/obversa/host/launch"
	"github.com/obversa/obversa/host/runstate"
	"github.com/obversa/obversa/host/watchdog"
	"github.com/obversa/obversa/internal/failpoint"
)

// The first worker of `obversa run` launches its plugins before the run
// is handed to it (docs/decisions.md, "The first worker launches its
// plugins before the hand-over").

// workerStarts counts the run:worker-started events of the run at runDir.
func workerStarts(t *testing.T, runDir string) int {
	t.Helper()
	n := 0
	for _, line := range eventLines(t, runDir) {
		if strings.Contains(line, runstate.EventWorkerStarted) {
			n++
		}
	}
	return n
}

// TestFirstWorkerUsesEarlyLaunches: a quickstart run uses the plugins its
// first worker launched before the hand-over (plugins.log says so), and
// the record is a first worker's: one run:worker-started.
func TestFirstWorkerUsesEarlyLaunches(t *testing.T) {
	runFile := example(t, "quickstart")
	dir := filepath.Dir(runFile)
	if r := obversa(t, dir, "run", "--lock", "--run-id", "early", runFile); r.code != 0 {
		t.Fatalf("run: exit %d: %s", r.code, r.stderr)
	}
	runDir := runDirOf(runFile, "early")
	log, err := os.ReadFile(filepath.Join(runDir, watchdog.PluginsLog))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(log), watchdog.EarlyLaunchLog) {
		t.Errorf("plugins.log does not say the early launches were used:\n%s", log)
	}
	if n := workerStarts(t, runDir); n != 1 {
		t.Errorf("%d run:worker-started events, want 1", n)
	}
}

// TestEarlyLaunchedWorkerKilled kills the first worker once the plugins
// it launched before the hand-over have started (failpoint.EarlyLaunched):
// its plugins die with it, the run is carried on by a worker the watchdog
// starts in its place, and nothing of the run outlives the command.
func TestEarlyLaunchedWorkerKilled(t *testing.T) {
	runFile := example(t, "quickstart")
	dir := filepath.Dir(runFile)
	flag := filepath.Join(dir, "fault.flag")
	r := obversaEnv(t, dir, []string{failpoint.Env + "=" + failpoint.EarlyLaunched + "::" + flag}, "run", "--lock", "--run-id", "ek", runFile)
	if _, err := os.Stat(flag); err != nil {
		t.Fatalf("the failpoint did not fire (%v); exit %d: %s", err, r.code, r.stderr)
	}
	if r.code != 0 {
		t.Fatalf("run: exit %d, want 0: %s", r.code, r.stderr)
	}
	runDir := runDirOf(runFile, "ek")
	waitNoneMarked(t, launch.OwnerEnv+"="+watchdog.OwnerMarker(runDir))
	if v := obversa(t, dir, "verify", runDir); v.code != 0 {
		t.Errorf("verify: exit %d: %s %s", v.code, v.stdout, v.stderr)
	}
}

// TestWatchdogKilledBeforeKeeperStopsEarlyPlugins kills `obversa run`
// once the run is recorded and before its keeper starts
// (failpoint.BeforeKeeper), while its first worker launches plugins
// before the hand-over: the worker reads the end of its stdin, closes its
// plugins and exits, so no process of the run survives (no keeper was
// there to stop them), and the run holds nothing but its start.
func TestWatchdogKilledBeforeKeeperStopsEarlyPlugins(t *testing.T) {
	runFile := example(t, "quickstart")
	dir := filepath.Dir(runFile)
	flag := filepath.Join(dir, "fault.flag")
	r := obversaEnv(t, dir, []string{failpoint.Env + "=" + failpoint.BeforeKeeper + "::" + flag}, "run", "--lock", "--run-id", "wk", runFile)
	if _, err := os.Stat(flag); err != nil {
		t.Fatalf("the failpoint did not fire (%v); exit %d: %s", err, r.code, r.stderr)
	}
	runDir := runDirOf(runFile, "wk")
	kv := launch.OwnerEnv + "=" + watchdog.OwnerMarker(runDir)
	// Bounded by the worker's own closing of its plugins, not a moment
	// chosen here.
	for deadline := time.Now().Add(30 * time.Second); len(markedAlive(t, kv)) > 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("processes of the run survive its watchdog: %v", markedAlive(t, kv))
		}
	}
	if n := workerStarts(t, runDir); n != 0 {
		t.Errorf("%d run:worker-started events, want 0: the run was never handed over", n)
	}
	if left := taggedGroupsLeft(runDir); len(left) > 0 {
		t.Errorf("the run's cgroups are left: %v", left)
	}
}

// TestRefusedRunLeavesNoWorker: the first worker starts once the run file
// is decoded, before its plugins are pinned; a run refused after that (an
// unpinned plugin) stops it before the command exits.
func TestRefusedRunLeavesNoWorker(t *testing.T) {
	runFile := example(t, "quickstart")
	dir := filepath.Dir(runFile)
	r := obversa(t, dir, "run", "--run-id", "refused", runFile)
	if r.code != 2 || !strings.Contains(r.stderr, "not pinned") {
		t.Fatalf("run: exit %d, want 2 for an unpinned plugin: %s", r.code, r.stderr)
	}
	if left := markedAlive(t, launch.OwnerEnv+"="+watchdog.OwnerMarker(runDirOf(runFile, "refused"))); len(left) > 0 {
		t.Errorf("processes of the refused run outlive the command: %v", left)
	}
	if _, err := os.Stat(runDirOf(runFile, "refused")); !os.IsNotExist(err) {
		t.Errorf("the refused run left its directory (%v)", err)
	}
}
