package runview

import (
	"testing"
	"time"

	"github.com/obversa/obversa/host/graph"
	"github.com/obversa/obversa/host/runstate"
)

// TestHaltedRunNothingRuns: while nothing carries the run on (paused, or
// no live holder), a position dispatched and never started is not
// counted running, and the run's own elapsed time stops at its last
// event; a held running run counts it and its clock runs to now.
func TestHaltedRunNothingRuns(t *testing.T) {
	t.Parallel()
	dispatched := []any{graph.EventNodeDispatched, graph.DispatchedData{Dispatches: []graph.Dispatch{{Node: "a", Position: "dag/a/1"}}}}
	paused := append(append([]any{}, dispatched...), graph.EventRunWaiting, runstate.Message("r", runstate.KindPaused, "OPERATOR_PAUSE", "paused"))
	tests := []struct {
		name    string
		events  []any
		held    bool
		running int
		elapsed time.Duration
	}{
		{"held", dispatched, true, 1, time.Minute},
		{"interrupted", dispatched, false, 0, time.Second},
		{"paused", paused, true, 0, 2 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			st := fold(t, tt.events...)
			s := Summarize(st, "/runs/r", t0.Add(time.Minute), tt.held)
			if s.Nodes.Running != tt.running || s.ElapsedMS != tt.elapsed.Milliseconds() {
				t.Errorf("%d running after %d ms; want %d after %d", s.Nodes.Running, s.ElapsedMS, tt.running, tt.elapsed.Milliseconds())
			}
		})
	}
}
