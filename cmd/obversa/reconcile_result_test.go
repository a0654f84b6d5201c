package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// reconcileUseRunFile is timeoutRunFile, its work node a command that is
// not retry_safe and outlives its timeout, with a downstream node whose
// input reads the work node's result: ${input.results.work.stdout}.
var reconcileUseRunFile = strings.NewReplacer(
	"WORK", slowBinding,
	"RETRYSAFE", "false",
	`input      = { command = ["true"] }`, `input      = { command = ["echo", "after ${input.results.work.stdout}"] }`,
).Replace(timeoutRunFile)

// TestReconciledDoneNeedsResult: resume --reconciled=done without
// --result is refused, before anything is recorded, when a downstream
// input cannot render with a null result — naming the node, the field
// and --result — instead of carrying the run on to fail the downstream
// node INPUT_RENDER. --result with the value carries the run to
// completion with that value downstream; an explicit --result null is
// recorded as asked.
func TestReconciledDoneNeedsResult(t *testing.T) {
	tests := []struct {
		name   string
		result []string // --result, after the refused resume
		exit   int
		want   string // in the record after the resume
	}{
		{"value", []string{"--result", `{"stdout": "given"}`}, 0, `after given`},
		{"explicit-null", []string{"--result", "null"}, exitFailed, `INPUT_RENDER`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			runFile, dir, _ := writeEffectsRun(t, reconcileUseRunFile)
			r := obversa(t, dir, "run", "--run-id", "t", runFile)
			runDir := runDirOf(runFile, "t")
			if st := status(t, runDir); r.code != exitPaused || len(st.PauseReasons) != 1 || st.PauseReasons[0].Kind != "reconcile-attempt" {
				t.Fatalf("run: exit %d, pause reasons %+v; want a reconcile-attempt pause: %s", r.code, st.PauseReasons, r.stderr)
			}
			before := eventLines(t, runDir)
			rr := obversa(t, dir, "resume", "--position", "dag/work/1", "--reconciled=done", runDir)
			for _, want := range []string{"RECONCILE_RESULT_NEEDED", `node "after" input field command[1]`, "input.results.work.stdout", "--result '<json>'", "--result null", "nothing was recorded"} {
				if rr.code != exitUsage || !strings.Contains(rr.stderr, want) {
					t.Errorf("resume --reconciled=done without --result: exit %d, want %d and %q in:\n%s", rr.code, exitUsage, want, rr.stderr)
				}
			}
			if after := eventLines(t, runDir); len(after) != len(before) {
				t.Fatalf("the refused resume recorded %d events:\n%s", len(after)-len(before), strings.Join(after[len(before):], "\n"))
			}
			args := append([]string{"resume", "--position", "dag/work/1", "--reconciled=done"}, tt.result...)
			rr = obversa(t, dir, append(args, runDir)...)
			events, err := os.ReadFile(filepath.Join(runDir, "events.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			if rr.code != tt.exit || !strings.Contains(string(events), tt.want) {
				t.Fatalf("resume %v: exit %d, want %d and %q in the record: %s\n%s", tt.result, rr.code, tt.exit, tt.want, rr.stderr, events)
			}
		})
	}
}

// TestReconciledResultTooLarge: resume --reconciled=done with a --result
// larger than the run's storage.max_event_payload_bytes is refused (exit
// 2, STORAGE_LIMIT_EXCEEDED) naming the recorded size, the limit, the
// setting and what to do instead, and records nothing; a --result that
// fits is then recorded and carries the run on.
func TestReconciledResultTooLarge(t *testing.T) {
	t.Parallel()
	runFile, dir, _ := writeEffectsRun(t, "storage {\n  max_event_payload_bytes = 1024\n}\n"+reconcileUseRunFile)
	r := obversa(t, dir, "run", "--run-id", "t", runFile)
	runDir := runDirOf(runFile, "t")
	if st := status(t, runDir); r.code != exitPaused || len(st.PauseReasons) != 1 || st.PauseReasons[0].Kind != "reconcile-attempt" {
		t.Fatalf("run: exit %d, pause reasons %+v; want a reconcile-attempt pause: %s", r.code, st.PauseReasons, r.stderr)
	}
	before := eventLines(t, runDir)
	big := `{"stdout": "` + strings.Repeat("x", 3000) + `"}`
	rr := obversa(t, dir, "resume", "--position", "dag/work/1", "--reconciled=done", "--result", big, runDir)
	m := regexp.MustCompile(`recorded result \(graph:node-completed\) (\d+) bytes`).FindStringSubmatch(rr.stderr)
	if rr.code != exitUsage || m == nil {
		t.Fatalf("resume with a --result over the limit: exit %d, want %d and the recorded size in:\n%s", rr.code, exitUsage, rr.stderr)
	}
	if n, _ := strconv.Atoi(m[1]); n <= 3000 {
		t.Errorf("recorded size %d, want more than the 3000 bytes of the result", n)
	}
	for _, want := range []string{"STORAGE_LIMIT_EXCEEDED", "storage.max_event_payload_bytes = 1024", "run file", "Nothing was recorded", "smaller --result", "--reconciled=not-done"} {
		if !strings.Contains(rr.stderr, want) {
			t.Errorf("resume with a --result over the limit: want %q in:\n%s", want, rr.stderr)
		}
	}
	if after := eventLines(t, runDir); len(after) != len(before) {
		t.Fatalf("the refused resume recorded %d events:\n%s", len(after)-len(before), strings.Join(after[len(before):], "\n"))
	}
	rr = obversa(t, dir, "resume", "--position", "dag/work/1", "--reconciled=done", "--result", `{"stdout": "given"}`, runDir)
	events, err := os.ReadFile(filepath.Join(runDir, "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if rr.code != 0 || !strings.Contains(string(events), `"result":{"stdout":"given"}`) {
		t.Fatalf("resume with a --result that fits: exit %d, want 0 and the result recorded: %s\n%s", rr.code, rr.stderr, events)
	}
}
