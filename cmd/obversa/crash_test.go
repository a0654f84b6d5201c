package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/obversa/obversa/host/runstate"
	"github.com/obversa/obversa/internal/failpoint"
)

// crashRunFile is a two-node graph whose first node ("work") leaves one
// line in EFFECTS per execution: an engine node on the mock engine
// (effects_file) or a binding node whose command appends to the file.
const crashRunFile = `
restart {
  max_restarts    = MAXRESTARTS
  initial_backoff = "50ms"
  max_backoff     = "200ms"
}
teardown_grace = "1s"
plugin "mock" {
  type   = "engine"
  path   = "BIN/mock-engine"
  config = { effects_file = "EFFECTS", responses = [{ node = "work", delay = "1s", text = "done" }] }
}
plugin "shell" {
  type = "node"
  path = "BIN/cmd-engine"
}
lane "w" {
  requested = { adapter = "mock", provider = "local", model_family = "scripted", model = "m1", tools = [] }
}
graph "dag" {
  node "work" {
    WORK
    retry_safe = RETRYSAFE
  }
  node "after" {
    binding    = "shell"
    depends_on = ["work"]
    input      = { command = ["true"] }
    retry_safe = true
  }
}
`

const (
	engineWork  = `lane = "w"` + "\n    prompt = \"do the work\""
	bindingWork = `binding = "shell"` + "\n    input = { command = [\"sh\", \"-c\", \"echo x >> EFFECTS; sleep 1; echo ok\"] }"
)

func effects(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

// writeEffectsRun writes run file text in a new directory with EFFECTS
// naming effects.log there, and locks its plugins; it returns the run
// file, its directory and the effects file.
func writeEffectsRun(t *testing.T, text string) (runFile, dir, eff string) {
	t.Helper()
	runFile = writeRunFile(t, text)
	dir = filepath.Dir(runFile)
	eff = filepath.Join(dir, "effects.log")
	text = strings.ReplaceAll(text, "EFFECTS", eff)
	text = strings.ReplaceAll(text, "BIN/", binDir+"/")
	if err := os.WriteFile(runFile, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := obversa(t, dir, "plugin", "lock", runFile); r.code != 0 {
		t.Fatal(r.stderr)
	}
	return runFile, dir, eff
}

// statusReport is what the tests read of status --json.
type statusReport struct {
	Phase        string `json:"phase"`
	RestartCount int    `json:"restart_count"`
	PauseReasons []struct {
		Kind      string `json:"kind"`
		Position  string `json:"position"`
		AttemptID string `json:"attempt_id"`
		Reason    string `json:"reason"`
	} `json:"pause_reasons"`
	Active          []any `json:"active"`
	CleanupVerified *bool `json:"cleanup_verified"`
	RestartsUsed    int   `json:"restarts_used"`
	RestartsLeft    int   `json:"restarts_left"`
	Usage           []struct {
		Node  string `json:"node"`
		Usage any    `json:"usage"`
	} `json:"usage"`
	UsageTotals struct {
		Output          int64 `json:"output"`
		UnmeasuredCalls int   `json:"unmeasured_calls"`
	} `json:"usage_totals"`
}

func status(t *testing.T, dir string) statusReport {
	t.Helper()
	r := obversa(t, dir, "status", "--json", dir)
	var s statusReport
	if err := json.Unmarshal([]byte(r.stdout), &s); err != nil {
		t.Fatalf("status --json: %v: %s %s", err, r.stdout, r.stderr)
	}
	return s
}

// TestCrashMatrix kills the worker at each crash boundary of docs/architecture.md#the-executor for
// an engine and a binding node, retry-safe or not, lets the watchdog
// restart it, and checks restart count, final phase and effect count.
func TestCrashMatrix(t *testing.T) {
	type want struct {
		phase   string
		effects int
	}
	tests := []struct {
		point     string
		retrySafe bool
		want      want
	}{
		{"after-dispatch", true, want{"completed", 1}},
		{"after-dispatch", false, want{"completed", 1}},
		{"during", true, want{"completed", 2}},
		{"during", false, want{"paused", 1}},
		{"after-result", true, want{"completed", 1}},
		{"after-result", false, want{"completed", 1}},
	}
	for _, kind := range []string{"engine", "binding"} {
		for _, tt := range tests {
			name := fmt.Sprintf("%s/%s/retry_safe=%v", kind, tt.point, tt.retrySafe)
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				work := engineWork
				if kind == "binding" {
					work = bindingWork
				}
				runFile, dir, eff := writeEffectsRun(t, strings.NewReplacer("WORK", work, "RETRYSAFE", fmt.Sprint(tt.retrySafe), "MAXRESTARTS", "2").Replace(crashRunFile))
				var r result
				if tt.point == "during" {
					r = killDuring(t, dir, runFile, eff)
				} else {
					r = obversaEnv(t, dir, []string{failpoint.Env + "=" + tt.point + ":work:" + filepath.Join(dir, "fault.flag")}, "run", "--run-id", "c", runFile)
				}
				runDir := runDirOf(runFile, "c")
				st := status(t, runDir)
				wantEffects := tt.want.effects
				if st.Phase != tt.want.phase || st.RestartCount != 1 || effects(t, eff) != wantEffects {
					t.Fatalf("phase %s restarts %d effects %d; want %s, 1, %d\nexit %d stderr:\n%s\nevents:\n%s",
						st.Phase, st.RestartCount, effects(t, eff), tt.want.phase, wantEffects, r.code, r.stderr, strings.Join(eventLines(t, runDir), "\n"))
				}
				if tt.want.phase == "paused" {
					if r.code != exitPaused || len(st.PauseReasons) != 1 || st.PauseReasons[0].Kind != "reconcile-attempt" || st.PauseReasons[0].AttemptID == "" {
						t.Fatalf("exit %d, pause reasons %+v", r.code, st.PauseReasons)
					}
					// The request says why the attempt is uncertain: the
					// worker running it was SIGKILLed (the record's
					// run:worker-exited).
					if want := "the worker running it was ended by a signal (killed); its effect may have happened"; st.PauseReasons[0].Reason != want {
						t.Fatalf("reconcile reason %q, want %q", st.PauseReasons[0].Reason, want)
					}
					// The operator says the attempt did not happen: it runs again.
					rr := obversa(t, dir, "resume", "--position", "dag/work/1", "--reconciled=not-done", runDir)
					if rr.code != 0 || effects(t, eff) != 2 {
						t.Fatalf("resume: exit %d, effects %d: %s", rr.code, effects(t, eff), rr.stderr)
					}
				}
			})
		}
	}
}

// killDuring starts a run, SIGKILLs its worker once the work node has left
// its effect (after start, before the result) and waits for the run.
func killDuring(t *testing.T, dir, runFile, eff string) result {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "obversa"), "run", "--run-id", "c", runFile)
	cmd.Dir = dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for effects(t, eff) == 0 {
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatalf("the work node never ran: %s", errb.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	pid := workerPID(t, runDirOf(runFile, "c"))
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill worker %d: %v", pid, err)
	}
	err := cmd.Wait()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	}
	return result{code: code, stdout: out.String(), stderr: errb.String()}
}

// workerPID reads the pid of the last worker the watchdog recorded.
func workerPID(t *testing.T, runDir string) int {
	t.Helper()
	pid, err := readWorkerPID(runDir)
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// readWorkerPID reads the pid of the last run:worker-started, for callers
// off the test's goroutine.
func readWorkerPID(runDir string) (int, error) {
	b, err := os.ReadFile(filepath.Join(runDir, "events.jsonl"))
	if err != nil {
		return 0, err
	}
	pid := 0
	for _, line := range strings.Split(string(b), "\n") {
		var e struct {
			Type string `json:"type"`
			Data struct {
				PID int `json:"pid"`
			} `json:"data"`
		}
		if json.Unmarshal([]byte(line), &e) == nil && e.Type == runstate.EventWorkerStarted {
			pid = e.Data.PID
		}
	}
	if pid == 0 {
		return 0, errors.New("no run:worker-started in the record")
	}
	return pid, nil
}
