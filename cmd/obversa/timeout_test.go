package main

import (
	"strconv"
	"strings"
	"testing"
)

// timeoutRunFile is crashRunFile with a node timeout: the work node's
// first execution outlives it (the mock engine's first call waits a
// minute; the command sleeps while EFFECTS has fewer than two lines, or
// stops its own plugin with SIGSTOP), a later one answers at once. No
// worker restarts: nothing here crashes.
var timeoutRunFile = strings.NewReplacer(
	`responses = [{ node = "work", delay = "1s", text = "done" }]`,
	`responses = [{ node = "work", calls = [1], delay = "60s", text = "late" }, { node = "work", text = "done" }]`,
	"    retry_safe = RETRYSAFE", "    timeout    = \"3s\"\n    retry_safe = RETRYSAFE",
	"MAXRESTARTS", "0",
).Replace(crashRunFile)

const (
	slowBinding = `binding = "shell"` + "\n    input = { command = [\"sh\", \"-c\", \"echo x >> EFFECTS; if [ $(wc -l < EFFECTS) -lt 2 ]; then sleep 60; fi; echo ok\"] }"
	hungBinding = `binding = "shell"` + "\n    input = { command = [\"sh\", \"-c\", \"echo x >> EFFECTS; if [ $(wc -l < EFFECTS) -lt 2 ]; then kill -STOP $PPID; sleep 60; fi; echo ok\"] }"
)

// TestTimeoutUncertain runs a node whose first execution is cut off by its
// timeout (the host cancels the call; a plugin stopped with SIGSTOP never
// answers). Retry-safe, it fails TIMEOUT and runs again under
// retry_cap_per_node. Not retry-safe, its effect may have happened: it
// pauses with a reconcile-attempt request naming the timeout and is not
// run again (docs/run-file.md, "retry_safe"); resume --reconciled=done
// records it done without running it, --reconciled=not-done runs it.
func TestTimeoutUncertain(t *testing.T) {
	tests := []struct {
		name       string
		work       string
		retrySafe  bool
		reconciled string // "" when the run completes by itself
		effects    int    // executions when the run has completed
	}{
		{"binding/retry_safe", slowBinding, true, "", 2},
		{"binding/not-done", slowBinding, false, "not-done", 2},
		{"binding/done", slowBinding, false, "done", 1},
		{"hung-plugin/done", hungBinding, false, "done", 1},
		{"engine/retry_safe", engineWork, true, "", 2},
		{"engine/done", engineWork, false, "done", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			runFile, dir, eff := writeEffectsRun(t, strings.NewReplacer("WORK", tt.work, "RETRYSAFE", strconv.FormatBool(tt.retrySafe)).Replace(timeoutRunFile))
			r := obversa(t, dir, "run", "--progress", "--run-id", "t", runFile)
			runDir := runDirOf(runFile, "t")
			events := func() string { return strings.Join(eventLines(t, runDir), "\n") }
			if tt.reconciled == "" {
				if r.code != 0 || effects(t, eff) != tt.effects || !failedTimeout(t, runDir) {
					t.Fatalf("exit %d, effects %d, want 0 and %d after a TIMEOUT failure: %s\n%s", r.code, effects(t, eff), tt.effects, r.stderr, events())
				}
				return
			}
			st := status(t, runDir)
			if r.code != exitPaused || st.Phase != "paused" || len(st.PauseReasons) != 1 || st.PauseReasons[0].Kind != "reconcile-attempt" ||
				st.PauseReasons[0].AttemptID == "" || !strings.Contains(st.PauseReasons[0].Reason, "timed out after 3s") {
				t.Fatalf("exit %d, phase %s, pause reasons %+v; want a reconcile-attempt pause naming the timeout: %s\n%s", r.code, st.Phase, st.PauseReasons, r.stderr, events())
			}
			if n := effects(t, eff); n != 1 || failedTimeout(t, runDir) || len(recorded(t, runDir, "graph:node-dispatched")) != 1 {
				t.Fatalf("effects %d, want 1, no failure and one dispatch:\n%s", n, events())
			}
			if !strings.Contains(r.stdout+r.stderr, "waits for reconcile-attempt (timed out after 3s; its effect may have happened)") {
				t.Errorf("progress does not say why dag/work/1 waits:\n%s%s", r.stdout, r.stderr)
			}
			if s := obversa(t, dir, "status", runDir); !strings.Contains(s.stdout, "timed out after 3s") {
				t.Errorf("status does not name the timeout:\n%s", s.stdout)
			}
			rr := obversa(t, dir, "resume", "--position", "dag/work/1", "--reconciled="+tt.reconciled, runDir)
			if st := status(t, runDir); rr.code != 0 || st.Phase != "completed" || effects(t, eff) != tt.effects {
				t.Fatalf("resume --reconciled=%s: exit %d, phase %s, effects %d; want 0, completed, %d: %s\n%s",
					tt.reconciled, rr.code, st.Phase, effects(t, eff), tt.effects, rr.stderr, events())
			}
		})
	}
}

// failedTimeout reports whether the record holds a TIMEOUT failure of
// the work node.
func failedTimeout(t *testing.T, runDir string) bool {
	t.Helper()
	for _, f := range recorded(t, runDir, "graph:node-failed") {
		if f["node"] == "work" && f["code"] == "TIMEOUT" {
			return true
		}
	}
	return false
}
