package main

import (
	"strings"
	"testing"

	"github.com/obversa/obversa/host/runview"
)

// The rows of the attempts in flight keep their streamed text in one
// column whatever their clocks say: a clock wider than the usual seven
// cells ("interrupted", "not started") widens the column for every row
// instead of pushing its own row's text right.
func TestAttemptLinesAlign(t *testing.T) {
	t.Parallel()
	plain := func(s ...string) string { return strings.Join(s, "") }
	for _, tc := range []struct {
		name     string
		attempts []runview.Attempt
	}{
		{"running", []runview.Attempt{
			{Position: "a", Status: runview.StatusStarted, ElapsedMS: 1200, Last: "TEXT a"},
			{Position: "long/b", Status: runview.StatusStarted, ElapsedMS: 75000, Last: "TEXT b"}}},
		{"halted", []runview.Attempt{
			{Position: "a", Status: runview.StatusStarted, ElapsedMS: 1200, Last: "TEXT a"},
			{Position: "b", Status: runview.StatusInterrupted, ElapsedMS: 1200, Last: "TEXT b"},
			{Position: "c", Status: runview.StatusDispatched, Last: "TEXT c"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lines := attemptLines(tc.attempts, plain)
			if len(lines) != len(tc.attempts) {
				t.Fatalf("%d lines for %d attempts: %q", len(lines), len(tc.attempts), lines)
			}
			at := strings.Index(lines[0], "TEXT")
			for i, l := range lines {
				if got := strings.Index(l, "TEXT"); got != at || at < 0 {
					t.Errorf("line %d %q: text at %d; want %d, as line 0 %q", i, l, got, at, lines[0])
				}
				if want := attemptClock(tc.attempts[i]); !strings.Contains(l, want) {
					t.Errorf("line %d %q: want its clock %q", i, l, want)
				}
			}
		})
	}
}
