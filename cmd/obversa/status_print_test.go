package main

import (
	"strings"
	"testing"

	"github.com/obversa/obversa/host/graph"
	"github.com/obversa/obversa/host/runstate"
	"github.com/obversa/obversa/host/watchdog"
)

// TestPrintStatusUsage: each node's usage line prints the counters in the
// words show prints them, or the word unknown, one line per node in the
// report's order.
func TestPrintStatusUsage(t *testing.T) {
	r := &watchdog.Report{RunID: "r1", Phase: watchdog.PhaseCompleted, Usage: []watchdog.NodeUsage{
		{Node: "a", Usage: watchdog.UsageCounters{Input: 1, Output: 5}},
		{Node: "b", Usage: "unknown"},
		{Node: "c", Usage: watchdog.UsageCounters{CacheCreation: 2, CacheRead: 3, Input: 40, Output: 600}},
	}}
	var b strings.Builder
	printStatus(&b, r, "dir")
	want := `usage:    a in 1 · out 5
usage:    b unknown
usage:    c in 40 · out 600 · cache read 3 · cache write 2
`
	if i := strings.Index(b.String(), "usage:"); i < 0 || b.String()[i:] != want {
		t.Errorf("printStatus:\n%s\nwant its usage lines to be:\n%s", b.String(), want)
	}
}

// TestPrintStatusNextAnswersPauses: the next step printed for an
// interrupted run, or for a paused one whose result names no position,
// names the command that answers each position still waiting for a
// person, since a bare resume is refused while one waits; with none
// waiting an interrupted run's is a bare resume.
func TestPrintStatusNextAnswersPauses(t *testing.T) {
	operator := &runstate.Result{Kind: runstate.KindPaused, Code: "OPERATOR_PAUSE", Output: &runstate.Output{Message: "paused by an operator"}}
	tests := []struct {
		name    string
		phase   string
		result  *runstate.Result
		reasons []graph.PauseRequest
		want    string
	}{
		{"nothing waits", watchdog.PhaseInterrupted, nil, nil, "next:     no watchdog holds this run; carry it on with obversa resume dir\n"},
		{"an uncertain attempt waits", watchdog.PhaseInterrupted, nil, []graph.PauseRequest{{Kind: graph.PauseReconcile, Position: "dag/e7/1", AttemptID: "sha256:ab"}},
			"next:     no watchdog holds this run; say whether attempt sha256:ab of dag/e7/1 took effect with `obversa resume dir --position dag/e7/1 --reconciled=done|not-done [--result JSON]`\n"},
		{"paused by an operator while an approval waits", watchdog.PhasePaused, operator,
			[]graph.PauseRequest{{Kind: "OPERATOR_PAUSE"}, {Kind: graph.PauseApproval, Position: "dag/c/1"}},
			"next:     decide dag/c/1 with `obversa approve dir dag/c/1`\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			printStatus(&b, &watchdog.Report{RunID: "r1", Phase: tt.phase, Result: tt.result, PauseReasons: tt.reasons}, "dir")
			if !strings.Contains(b.String(), tt.want) {
				t.Errorf("printStatus:\n%s\nwant a line\n%s", b.String(), tt.want)
			}
		})
	}
}

// TestPrintStatusRunPause: a pause of the whole run, which has no
// position, prints its code alone, not an empty position before it.
func TestPrintStatusRunPause(t *testing.T) {
	var b strings.Builder
	printStatus(&b, &watchdog.Report{RunID: "r1", Phase: watchdog.PhasePaused, PauseReasons: []graph.PauseRequest{{Kind: "STORAGE_FULL"}}}, "dir")
	if !strings.Contains(b.String(), "waiting:  STORAGE_FULL\n") {
		t.Errorf("printStatus:\n%s\nwant a line: waiting:  STORAGE_FULL", b.String())
	}
}

// TestPrintStatusTimeoutPassed: a paused or interrupted run whose
// limits.timeout has passed says that carrying it on ends it TIMEOUT,
// beside the advice to answer what waits; one with time left, or one
// that ended, does not.
func TestPrintStatusTimeoutPassed(t *testing.T) {
	zero, left := int64(0), int64(5000)
	reasons := []graph.PauseRequest{{Kind: graph.PauseReconcile, Position: "dag/c0/1", AttemptID: "sha256:ab"}}
	for _, tt := range []struct {
		phase string
		left  *int64
		want  bool
	}{
		{watchdog.PhasePaused, &zero, true},
		{watchdog.PhaseInterrupted, &zero, true},
		{watchdog.PhasePaused, &left, false},
		{watchdog.PhasePaused, nil, false},
		{"failed", &zero, false},
	} {
		var b strings.Builder
		printStatus(&b, &watchdog.Report{RunID: "r1", Phase: tt.phase, PauseReasons: reasons, RemainingTimeoutMS: tt.left}, "dir")
		if got := strings.Contains(b.String(), "timeout:  the run's limits.timeout has passed"); got != tt.want {
			t.Errorf("phase %s, remaining %v: timeout line printed %v, want %v:\n%s", tt.phase, tt.left, got, tt.want, b.String())
		}
	}
}

// TestUsageLineCountsCalls: the calls that measured no usage are counted
// in words that agree with their number.
func TestUsageLineCountsCalls(t *testing.T) {
	for n, want := range map[int]string{
		0: "input 3, output 4, cache read 0, cache creation 0",
		1: "input 3, output 4, cache read 0, cache creation 0; 1 call measured no usage (unknown, not counted)",
		2: "input 3, output 4, cache read 0, cache creation 0; 2 calls measured no usage (unknown, not counted)",
	} {
		u := &runstate.RunUsage{Totals: runstate.Totals{Input: 3, Output: 4, UnmeasuredCalls: n}}
		if got := usageLine(u); got != want {
			t.Errorf("usageLine with %d unmeasured calls = %q, want %q", n, got, want)
		}
	}
}
