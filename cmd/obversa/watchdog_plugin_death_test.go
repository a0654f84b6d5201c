package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/obversa/obversa/host/runstate"
	"github.com/obversa/obversa/host/watchdog"
	"github.com/obversa/obversa/internal/testutil"
)

// TestPluginDeathIsACrash: the plugin process is SIGKILLed under an
// attempt; the attempt is not recorded as a node failure (no retry is
// burned), the worker's exit records the cause (PLUGIN_DIED, naming the
// plugin, its binary, the signal and the position) and the run's progress
// says it, the worker is restarted with a fresh plugin, and the retry-safe
// node runs again at the same position.
func TestPluginDeathIsACrash(t *testing.T) {
	t.Parallel()
	runDir, errb, code := killPluginUnderAttempt(t, false)
	if code != 0 {
		t.Fatalf("run exited %d: %s", code, errb)
	}
	if n := len(recorded(t, runDir, "graph:node-failed")); n != 0 {
		t.Fatalf("%d node failures recorded for a plugin death", n)
	}
	resumed := recorded(t, runDir, "graph:node-resumed")
	if len(resumed) != 1 || resumed[0]["position"] != "dag/slow/1" {
		t.Fatalf("node-resumed %v, want dag/slow/1 once", resumed)
	}
}

// TestPluginDeathUnsafeReconciles: the plugin dies under the attempt of a
// node that is not retry-safe: the cause is recorded as for a retry-safe
// one, and the next worker pauses the position for reconciliation instead
// of running it again.
func TestPluginDeathUnsafeReconciles(t *testing.T) {
	t.Parallel()
	runDir, errb, code := killPluginUnderAttempt(t, true)
	if code != exitPaused {
		t.Fatalf("run exited %d, want %d (paused): %s", code, exitPaused, errb)
	}
	paused := recorded(t, runDir, "graph:node-paused")
	if len(paused) != 1 || paused[0]["position"] != "dag/slow/1" || paused[0]["request"].(map[string]any)["kind"] != "reconcile-attempt" {
		t.Fatalf("node-paused %v, want dag/slow/1 reconcile-attempt", paused)
	}
	// The request says why the attempt is uncertain: the cause the
	// worker's exit recorded (the plugin's name, binary and signal).
	exit := recorded(t, runDir, "run:worker-exited")[0]
	want := fmt.Sprintf("the worker running it stopped (PLUGIN_DIED: %s); its effect may have happened", exit["message"])
	if got := paused[0]["request"].(map[string]any)["reason"]; got != want {
		t.Fatalf("reconcile reason %q, want %q", got, want)
	}
	if st := status(t, runDir); len(st.PauseReasons) != 1 || st.PauseReasons[0].Reason != want {
		t.Fatalf("status pause reasons %+v, want the reason %q", st.PauseReasons, want)
	}
	if n := len(recorded(t, runDir, "graph:node-resumed")); n != 0 {
		t.Fatalf("%d node-resumed for a node that is not retry-safe", n)
	}
}

// killPluginUnderAttempt runs the slow node (retry-safe unless unsafe),
// SIGKILLs its plugin process mid-attempt, checks the recorded and shown
// cause, and returns the run's directory, stderr and exit code.
func killPluginUnderAttempt(t *testing.T, unsafe bool) (runDir, stderr string, code int) {
	t.Helper()
	dir0 := t.TempDir()
	flag := filepath.Join(dir0, "slow.flag")
	slow := "if [ -f " + flag + " ]; then echo second; else touch " + flag + "; sleep 60; fi"
	runFile, dir, _ := watchdogCase{restart: `max_restarts = 1
  initial_backoff = "50ms"`, limits: `timeout = "2m"`, slow: slow, writes: []string{dir0}, unsafe: unsafe}.write(t)
	cmd := exec.Command(filepath.Join(binDir, "obversa"), "run", "--progress=plain", "--run-id", "x", runFile)
	cmd.Dir = dir
	var errb testutil.SyncBuffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	runDir = runDirOf(runFile, "x")
	waitFor(t, 30*time.Second, "the slow node to start", func() bool { _, err := os.Stat(flag); return err == nil })
	path := killPlugin(t, runDir)
	code = exitCode(cmd.Wait())
	exits := recorded(t, runDir, "run:worker-exited")
	if len(exits) != 1 {
		t.Fatalf("worker-exited %v, want one", exits)
	}
	want := fmt.Sprintf(`plugin "shell" (%s) died during Invoke: killed by signal SIGKILL, under the attempt at dag/slow/1`, path)
	if x := exits[0]; x["code"] != "PLUGIN_DIED" || x["message"] != want || x["path"] != path {
		t.Fatalf("worker-exited %v, want code PLUGIN_DIED, message %q, path %s", x, want, path)
	}
	if !strings.Contains(errb.String(), "worker stopped (PLUGIN_DIED: "+want+")") {
		t.Fatalf("the run's output does not say the plugin died (%q):\n%s", want, errb.String())
	}
	return runDir, errb.String(), code
}

// TestStatusWhileRecovering: while the watchdog waits to restart a worker
// whose plugin died, status says the run is recovering and why the last
// worker stopped (the recorded cause: PLUGIN_DIED, the plugin and the
// signal), in text and in JSON.
func TestStatusWhileRecovering(t *testing.T) {
	t.Parallel()
	dir0 := t.TempDir()
	flag := filepath.Join(dir0, "slow.flag")
	runFile, dir, _ := watchdogCase{restart: `max_restarts = 1
  initial_backoff = "10m"
  max_backoff = "10m"`, limits: `timeout = "20m"`, slow: "touch " + flag + "; sleep 60", writes: []string{dir0}}.write(t)
	cmd := exec.Command(filepath.Join(binDir, "obversa"), "run", "--run-id", "x", runFile)
	cmd.Dir = dir
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	runDir := runDirOf(runFile, "x")
	waitFor(t, 30*time.Second, "the slow node to start", func() bool { _, err := os.Stat(flag); return err == nil })
	path := killPlugin(t, runDir)
	waitFor(t, 30*time.Second, "the worker's exit to be recorded", func() bool { return len(recorded(t, runDir, "run:worker-exited")) == 1 })
	want := fmt.Sprintf(`worker stopped (PLUGIN_DIED: plugin "shell" (%s) died during Invoke: killed by signal SIGKILL, under the attempt at dag/slow/1)`, path)
	r := obversa(t, dir, "status", runDir)
	if r.code != 0 || !strings.Contains(r.stdout, "phase:    recovering\n") || !strings.Contains(r.stdout, "\nexit:     "+want+", at ") ||
		!strings.Contains(r.stdout, "\nbackoff:  restart 1 in ") {
		t.Fatalf("status exit %d, want phase recovering and the line %q:\n%s%s", r.code, "exit:     "+want, r.stdout, r.stderr)
	}
	r = obversa(t, dir, "status", "--json", runDir)
	var rep struct {
		Phase    string `json:"phase"`
		LastExit *struct {
			Restart int    `json:"restart"`
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"last_exit"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("status --json: %v: %s", err, r.stdout)
	}
	if x := rep.LastExit; rep.Phase != "recovering" || x == nil || x.Code != "PLUGIN_DIED" || "worker stopped (PLUGIN_DIED: "+x.Message+")" != want || x.Restart != 0 {
		t.Fatalf("status --json phase %s, last_exit %+v; want recovering and the plugin's death", rep.Phase, x)
	}
}

// killPlugin SIGKILLs the one plugin process of the run in runDir and
// returns its binary's path.
func killPlugin(t *testing.T, runDir string) string {
	t.Helper()
	var path string
	for _, p := range marked(t, runDir) {
		b, _ := os.ReadFile(filepath.Join("/proc", fmt.Sprint(p.PID), "cmdline"))
		if arg0, _, _ := strings.Cut(string(b), "\x00"); strings.Contains(arg0, "/plugins/sha256/") {
			if path != "" {
				t.Fatalf("two plugin processes: %s and %s", path, arg0)
			}
			if err := syscall.Kill(p.PID, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			path = arg0
		}
	}
	if path == "" {
		t.Fatal("no plugin process to kill")
	}
	return path
}

// TestPluginDyingEveryCall: the plugin of a retry-safe node dies under
// every attempt (its command kills it). Each death stops the worker,
// which restarts to launch the plugin again, until max_restarts runs out;
// the result says that every stop was a plugin's death — naming the
// plugin, its binary, the signal, the position and the log holding its
// stderr — not that the worker crashed; the exit records the position
// (died_under), and the node's own line says its plugin died under it.
func TestPluginDyingEveryCall(t *testing.T) {
	t.Parallel()
	runFile, dir, _ := watchdogCase{restart: `max_restarts = 1
  initial_backoff = "50ms"`, limits: `timeout = "2m"`, slow: "kill -KILL $PPID; sleep 60"}.write(t)
	r := obversa(t, dir, "run", "--run-id", "x", runFile)
	runDir := runDirOf(runFile, "x")
	fin := recorded(t, runDir, "graph:run-finished")
	if r.code != exitFailed || len(fin) != 1 || fin[0]["code"] != watchdog.CodeRestartExhausted {
		t.Fatalf("exit %d, result %v; want RESTART_EXHAUSTED:\n%s", r.code, fin, r.stderr)
	}
	exits := recorded(t, runDir, runstate.EventWorkerExited)
	if len(exits) != 2 {
		t.Fatalf("worker-exited %v, want two", exits)
	}
	last := exits[1]["message"].(string)
	if exits[1]["code"] != "PLUGIN_DIED" || !strings.HasPrefix(last, `plugin "shell" (`) || !strings.HasSuffix(last, "died during Invoke: killed by signal SIGKILL, under the attempt at dag/slow/1") {
		t.Fatalf("last worker-exited %v, want the plugin's death under dag/slow/1", exits[1])
	}
	if exits[1]["died_under"] != "dag/slow/1" {
		t.Fatalf("last worker-exited %v, want died_under dag/slow/1", exits[1])
	}
	want := "the worker stopped 2 times (max_restarts = 1), each time because a plugin died under an attempt" +
		" (a plugin is launched again by restarting its worker, so its death uses a restart); the last time " + last +
		"; what the plugin wrote to stderr is in " + filepath.Join(runDir, "plugins.log")
	if msg := fin[0]["output"].(map[string]any)["message"]; msg != want {
		t.Fatalf("result message %q, want %q", msg, want)
	}
	if strings.Contains(r.stdout+r.stderr, "crashed") {
		t.Fatalf("the output says the worker crashed:\n%s%s", r.stdout, r.stderr)
	}
	var aborted []map[string]any
	for _, f := range recorded(t, runDir, "graph:node-failed") {
		if f["position"] == "dag/slow/1" {
			aborted = append(aborted, f)
		}
	}
	wantNode := "the run ended (RESTART_EXHAUSTED) while the attempt was running; the last worker stopped because " + last
	if len(aborted) != 1 || aborted[0]["code"] != "ABORTED" || aborted[0]["message"] != wantNode {
		t.Fatalf("dag/slow/1 failures %v, want ABORTED %q", aborted, wantNode)
	}
}
