package runview

import (
	"testing"
	"time"

	"github.com/obversa/obversa/host/graph"
)

// TestHolderIsTheReaders: whether a live process holds the run is each
// reader's finding, given to each view, never kept in the fold they share:
// readers of one fold that found a holder and found none, in any order,
// each see their own — the started step started or cut off (interrupted,
// its clock stopped at the record's last event) — in every view: show's
// nodes and one node (the web UI's /api/runs/{id}/node too), graph RUN's
// colours, the counts of runs and the live view's attempts in flight.
func TestHolderIsTheReaders(t *testing.T) {
	t.Parallel()
	st := fold(t,
		graph.EventNodeDispatched, graph.DispatchedData{Dispatches: []graph.Dispatch{{Node: "a", Position: "dag/a/1"}}},
		graph.EventAttemptStarted, graph.AttemptStartedData{Node: "a", Position: "dag/a/1", AttemptID: "x"},
	)
	started := st.LastEventAt() // the step's start is the record's last event
	now := started.Add(time.Minute)
	live := NewLive(st, "/runs/r")
	for _, held := range []bool{false, true, true, false, false, true} {
		status, elapsed, running, cut := StatusStarted, time.Minute, 1, 0
		if !held {
			status, elapsed, running, cut = StatusInterrupted, 0, 0, 1
		}
		if a, _ := NodeOf(st, "a", now, held); a.Status != status || a.ElapsedMS != elapsed.Milliseconds() {
			t.Errorf("held %v: show a is %s after %d ms, want %s after %d", held, a.Status, a.ElapsedMS, status, elapsed.Milliseconds())
		}
		if n := Nodes(st, now, held); n[0].ID != "a" || n[0].Status != status {
			t.Errorf("held %v: show's nodes %+v, want a %s", held, n, status)
		}
		if got := Statuses(st, held)["a"]; got != status {
			t.Errorf("held %v: graph RUN colours a %s, want %s", held, got, status)
		}
		if c := Summarize(st, "/runs/r", now, held).Nodes; c.Running != running || c.Interrupted != cut {
			t.Errorf("held %v: counts %+v, want %d running and %d interrupted", held, c, running, cut)
		}
		if in := live.Snapshot(now, held).InFlight; len(in) != 1 || in[0].ElapsedMS != elapsed.Milliseconds() {
			t.Errorf("held %v: live view in flight %+v, want a after %d ms", held, in, elapsed.Milliseconds())
		}
	}
}
