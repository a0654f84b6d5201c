package runview

import (
	"testing"
	"time"

	"github.com/obversa/obversa/host/graph"
)

// TestHolderFoundAgainClearsTheCutOff: a reader that finds no holder shows
// the started step interrupted; a later reader of the same fold that finds
// a holder again (a resume that took the run and recorded nothing yet)
// shows it started, not cut off by the earlier reader's finding.
func TestHolderFoundAgainClearsTheCutOff(t *testing.T) {
	t.Parallel()
	st := fold(t,
		graph.EventNodeDispatched, graph.DispatchedData{Dispatches: []graph.Dispatch{{Node: "a", Position: "dag/a/1"}}},
		graph.EventAttemptStarted, graph.AttemptStartedData{Node: "a", Position: "dag/a/1", AttemptID: "x"},
	)
	now := t0.Add(time.Minute)
	for _, c := range []struct {
		held   bool
		status string
	}{
		{true, StatusStarted},
		{false, StatusInterrupted},
		{true, StatusStarted},
	} {
		Summarize(st, "/runs/r", now, c.held)
		a, _ := NodeOf(st, "a", now)
		if a.Status != c.status {
			t.Errorf("holder alive %v: node a is %s, want %s", c.held, a.Status, c.status)
		}
	}
}
