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
// event; a held running run counts it and its clock runs to now. The live
// view's attempts in flight agree: a halted run's dispatched position is
// dispatched (not started) and not running, and a started one is
// interrupted, not running, its clock stopped at the run's last event.
func TestHaltedRunNothingRuns(t *testing.T) {
	t.Parallel()
	dispatched := []any{graph.EventNodeDispatched, graph.DispatchedData{Dispatches: []graph.Dispatch{{Node: "a", Position: "dag/a/1"}}}}
	wait := []any{graph.EventRunWaiting, runstate.Message("r", runstate.KindPaused, "OPERATOR_PAUSE", "paused")}
	paused := append(append([]any{}, dispatched...), wait...)
	start := []any{graph.EventAttemptStarted, graph.AttemptStartedData{Node: "a", Position: "dag/a/1", AttemptID: "x"}}
	started := append(append([]any{}, dispatched...), start...)
	startedPaused := append(append([]any{}, started...), wait...)
	tests := []struct {
		name    string
		events  []any
		held    bool
		running int
		elapsed time.Duration
		// attempt is the live view's one attempt in flight: its
		// status, whether it runs, its clock.
		attempt Attempt
	}{
		{"held", dispatched, true, 1, time.Minute, Attempt{Status: StatusDispatched}},
		{"interrupted", dispatched, false, 0, time.Second, Attempt{Status: StatusDispatched}},
		{"paused", paused, true, 0, 2 * time.Second, Attempt{Status: StatusDispatched}},
		{"started, held", started, true, 1, time.Minute, Attempt{Status: StatusStarted, ElapsedMS: (time.Minute - 2*time.Second).Milliseconds()}},
		{"started, paused", startedPaused, true, 0, 3 * time.Second, Attempt{Status: StatusInterrupted, ElapsedMS: time.Second.Milliseconds()}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			st := fold(t, tt.events...)
			s := Summarize(st, "/runs/r", t0.Add(time.Minute), tt.held)
			if s.Nodes.Running != tt.running || s.ElapsedMS != tt.elapsed.Milliseconds() {
				t.Errorf("%d running after %d ms; want %d after %d", s.Nodes.Running, s.ElapsedMS, tt.running, tt.elapsed.Milliseconds())
			}
			want := tt.attempt
			want.Node, want.Position = "a", "dag/a/1"
			in := NewLive(st, "/runs/r").Snapshot(t0.Add(time.Minute), tt.held).InFlight
			if len(in) != 1 || in[0] != want {
				t.Errorf("live view in flight %+v, want %+v", in, want)
			}
		})
	}
}
