package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/obversa/obversa/internal/failpoint"
)

// loopCrashRunFile is a review loop whose draft fails review in round 1
// and passes in round 2. Every execution leaves a line in EFFECTS: the
// mock engine's "<node> <position> …" for author, "check <round>" for the
// binding reviewer.
const loopCrashRunFile = restartQuickly + `
teardown_grace = "1s"
plugin "mock" {
  type   = "engine"
  path   = "BIN/mock-engine"
  config = { effects_file = "EFFECTS", responses = [
    { node = "author", prompt_contains = "Fix:", text = "timeout = 5s" },
    { node = "author", text = "port = 80" },
  ] }
}
` + shellAndLane + `
graph "dag" {
  loop "config" {
    max_rounds = 3
    review     = "check"
    node "author" {
      lane       = "w"
      prompt     = "Write the config.${loop.round > 1 ? " Fix: ${loop.findings}" : ""}"
      retry_safe = RETRYSAFE
    }
    node "check" {
      binding    = "shell"
      depends_on = ["author"]
      input      = { command = ["sh", "-c", "echo check ${loop.round} >> EFFECTS; grep -q timeout"], stdin = "${input.results.author}" }
      retry_safe = true
    }
  }
  node "ship" {
    depends_on = ["config"]
    binding    = "shell"
    input      = { command = ["cat"], stdin = "${input.results.config.author}" }
    retry_safe = true
  }
}
`

// TestLoopCrashMatrix kills the worker at every boundary inside a round —
// a member dispatched, started, completed; the review recorded; a round
// started — lets the watchdog restart it, and checks that the run passes
// in round 2 as it does without a kill, that no member ran twice in a
// round and no round or review was recorded twice, and that a started
// author that is not retry_safe pauses for reconciliation.
func TestLoopCrashMatrix(t *testing.T) {
	// paused is the author position a kill leaves started and not
	// retry-safe: it waits for reconciliation.
	tests := []struct {
		point, key string
		retrySafe  bool
		paused     string
	}{
		{failpoint.AfterDispatch, "author", false, ""},
		{failpoint.AfterStart, "author", true, ""},
		{failpoint.AfterStart, "author", false, "dag/config/1/author/1"},
		{failpoint.AfterResult, "author", false, ""},
		{failpoint.AfterStart, "check", false, ""},
		// check's failure, its review, round 2 and author's start are one
		// batch (the dispatch decision is durable before the attempt starts).
		{failpoint.AfterResult, "check", true, ""},
		{failpoint.AfterResult, "check", false, "dag/config/2/author/1"},
		// The review shares that batch too.
		{failpoint.AfterReview, "config", true, ""},
		{failpoint.AfterReview, "config", false, "dag/config/2/author/1"},
		// Round 1 starts in one batch with author's dispatch and start.
		{failpoint.AfterRound, "config", true, ""},
		{failpoint.AfterRound, "config", false, "dag/config/1/author/1"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s:%s/retry_safe=%v", tt.point, tt.key, tt.retrySafe), func(t *testing.T) {
			t.Parallel()
			runFile, dir, eff := writeEffectsRun(t, strings.ReplaceAll(loopCrashRunFile, "RETRYSAFE", fmt.Sprint(tt.retrySafe)))
			r := obversaEnv(t, dir, []string{failpoint.Env + "=" + tt.point + ":" + tt.key + ":" + filepath.Join(dir, "fault.flag")}, "run", "--run-id", "c", runFile)
			runDir := runDirOf(runFile, "c")
			st := status(t, runDir)
			if _, err := os.Stat(filepath.Join(dir, "fault.flag")); err != nil {
				t.Fatalf("the failpoint never fired: %v", err)
			}
			if st.RestartCount != 1 {
				t.Fatalf("restarts %d, want 1: %s", st.RestartCount, r.stderr)
			}
			if tt.paused != "" {
				if r.code != exitPaused || len(st.PauseReasons) != 1 || st.PauseReasons[0].Kind != "reconcile-attempt" || st.PauseReasons[0].Position != tt.paused {
					t.Fatalf("exit %d, pause reasons %+v; want %s paused for reconciliation\n%s", r.code, st.PauseReasons, tt.paused, strings.Join(eventLines(t, runDir), "\n"))
				}
				// The kill came before the engine call: it did not happen.
				r = obversa(t, dir, "resume", "--position", tt.paused, "--reconciled=not-done", runDir)
			}
			if r.code != 0 {
				t.Fatalf("exit %d: %s\n%s", r.code, r.stderr, strings.Join(eventLines(t, runDir), "\n"))
			}
			checkLoopRecord(t, runDir, eff)
		})
	}
}

// Pieces of the crash tests' run files: a quick restart policy, and the
// shell binding with lane w on the mock engine.
const (
	restartQuickly = `
restart {
  max_restarts    = 2
  initial_backoff = "50ms"
  max_backoff     = "200ms"
}
`
	shellAndLane = `
plugin "shell" {
  type = "node"
  path = "BIN/cmd-engine"
}
lane "w" {
  requested = { adapter = "mock", provider = "local", model_family = "scripted", model = "m1", tools = [] }
}
`
)

// checkLoopRecord checks a review loop that passed in round 2: each
// member ran once per round, each round and each review is recorded once,
// each member position completed once.
func checkLoopRecord(t *testing.T, runDir, eff string) {
	t.Helper()
	b, err := os.ReadFile(eff)
	if err != nil {
		t.Fatal(err)
	}
	runs := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) >= 2 && f[0] == "author":
			runs[f[1]]++
		case len(f) == 2 && f[0] == "check":
			runs["check round "+f[1]]++
		}
	}
	want := map[string]int{"dag/config/1/author/1": 1, "dag/config/2/author/1": 1, "check round 1": 1, "check round 2": 1}
	if fmt.Sprint(runs) != fmt.Sprint(want) {
		t.Errorf("executions %v, want %v", runs, want)
	}
	seen := map[string]int{}
	for _, line := range eventLines(t, runDir) {
		seen[line]++
	}
	r := obversa(t, runDir, "events", "--json", runDir)
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		var e struct {
			Type string `json:"type"`
			Data struct {
				Loop  string `json:"loop"`
				Round int    `json:"round"`
			} `json:"data"`
		}
		if json.Unmarshal([]byte(line), &e) == nil && e.Data.Loop != "" {
			seen[fmt.Sprintf("%s %s %d", e.Type, e.Data.Loop, e.Data.Round)]++
		}
	}
	for _, once := range []string{
		"graph:loop-started config 0", "graph:loop-round-started config 1", "graph:loop-round-started config 2",
		"graph:loop-reviewed config 1", "graph:loop-reviewed config 2", "graph:loop-finished config 0",
		"graph:node-completed dag/config/1/author/1", "graph:node-completed dag/config/2/author/1",
		"graph:node-completed dag/config/2/check/1", "graph:node-failed dag/config/1/check/1", "graph:node-completed dag/ship/1",
	} {
		if seen[once] != 1 {
			t.Errorf("%q recorded %d times, want once", once, seen[once])
		}
	}
	if seen["graph:loop-round-started config 3"] != 0 {
		t.Error("a third round started")
	}
	if t.Failed() {
		t.Logf("events:\n%s", strings.Join(eventLines(t, runDir), "\n"))
	}
}
