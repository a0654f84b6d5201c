package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// reconcileReviewRunFile is a loop whose engine review member is not
// retry_safe and outlives its timeout on its first call: the run pauses
// for reconciliation of dag/config/1/review/1.
const reconcileReviewRunFile = `
restart {
  max_restarts    = 0
  initial_backoff = "50ms"
  max_backoff     = "200ms"
}
teardown_grace = "1s"
plugin "mock" {
  type   = "engine"
  path   = "BIN/mock-engine"
  config = { effects_file = "EFFECTS", responses = [
    { node = "author", text = "draft" },
    { node = "review", calls = [1], delay = "60s", json = { status = "pass", summary = "late" } },
    { node = "review", json = { status = "fail", summary = "again" } },
  ] }
}
lane "w" {
  requested = { adapter = "mock", provider = "local", model_family = "scripted", model = "m1", tools = [] }
}
graph "dag" {
  loop "config" {
    max_rounds = 3
    review     = "review"
    node "author" {
      lane   = "w"
      prompt = "write"
    }
    node "review" {
      lane       = "w"
      depends_on = ["author"]
      prompt     = "review ${input.results.author}"
      timeout    = "3s"
      retry_safe = false
    }
  }
}
`

// TestReconciledReviewNeedsVerdict: resume --reconciled=done on a loop's
// review member is refused, exit 2 and nothing recorded, when --result is
// missing or is not a verdict — naming the position, the verdict's shape
// and an example command — instead of reading it as a failed review and
// starting the next round (docs/run-file.md, "Loops"). A verdict is
// recorded: a passing one ends the loop passed in round 1.
func TestReconciledReviewNeedsVerdict(t *testing.T) {
	runFile, dir, _ := writeEffectsRun(t, reconcileReviewRunFile)
	r := obversa(t, dir, "run", "--run-id", "t", runFile)
	runDir := runDirOf(runFile, "t")
	const pos = "dag/config/1/review/1"
	if st := status(t, runDir); r.code != exitPaused || len(st.PauseReasons) != 1 || st.PauseReasons[0].Position != pos {
		t.Fatalf("run: exit %d, pause reasons %+v; want a reconcile-attempt pause of %s: %s", r.code, st.PauseReasons, pos, r.stderr)
	}
	before := eventLines(t, runDir)
	for _, tt := range []struct {
		name   string
		result []string
		want   string
	}{
		{"no-result", nil, "without --result"},
		{"other-status", []string{"--result", `{"status":"maybe"}`}, `status must be "pass" or "fail"`},
		{"prose", []string{"--result", `"looks fine"`}, "not an object"},
	} {
		args := append([]string{"resume", "--position", pos, "--reconciled=done"}, tt.result...)
		rr := obversa(t, dir, append(args, runDir)...)
		for _, want := range []string{"RECONCILE_RESULT_NEEDED", pos, tt.want, `"status": "pass"|"fail"`, "nothing was recorded",
			"obversa resume --position " + pos + ` --reconciled=done --result '{"status":"pass","summary":"…"}' ` + runDir} {
			if rr.code != exitUsage || !strings.Contains(rr.stderr, want) {
				t.Errorf("%s: exit %d, want %d and %q in:\n%s", tt.name, rr.code, exitUsage, want, rr.stderr)
			}
		}
		if after := eventLines(t, runDir); len(after) != len(before) {
			t.Fatalf("%s: the refused resume recorded %d events:\n%s", tt.name, len(after)-len(before), strings.Join(after[len(before):], "\n"))
		}
	}
	rr := obversa(t, dir, "resume", "--position", pos, "--reconciled=done", "--result", `{"status":"pass","summary":"checked by hand"}`, runDir)
	events, err := os.ReadFile(filepath.Join(runDir, "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if rr.code != 0 || strings.Contains(string(events), "dag/config/2/") {
		t.Fatalf("resume with a passing verdict: exit %d, want 0 and no round 2: %s\n%s", rr.code, rr.stderr, events)
	}
}
