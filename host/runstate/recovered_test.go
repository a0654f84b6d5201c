package runstate

import (
	"testing"
	"time"

	"github.com/obversa/obversa/host/graph"
	"github.com/obversa/obversa/store"
)

// TestRecoveredBeforeOrdersByRecord: whether the worker before the last
// one recovered an attempt (it started after the attempt) is read from
// the record's order, also when every event carries the same clock time
// (millisecond steps, several processes' clocks), and survives the fold
// snapshot.
func TestRecoveredBeforeOrdersByRecord(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	events := append(attemptStarted(t),
		EventWorkerExited, WorkerExitedData{PID: 10, ExitCode: -1, Signal: "killed", Reason: "crash"},
		EventWorkerStarted, WorkerStartedData{PID: 11, StartTime: 2, Restart: 1},
	)
	fold := func(events []any) *State {
		s := New()
		for i := 0; i+1 < len(events); i += 2 {
			if err := s.Apply(store.Event{Rev: int64(i/2 + 1), Type: events[i].(string), Data: mustJSON(events[i+1]), TS: at}); err != nil {
				t.Fatal(err)
			}
		}
		return s
	}
	// The worker that ran the attempt is the one before the last: it
	// did not recover it.
	if fold(events).RecoveredBefore("dag/a/1") {
		t.Error("the attempt's own worker, now the one before the last, is said to have recovered it")
	}
	// A third worker: the second started after the attempt, so it
	// recovered it.
	third := append(events,
		EventWorkerExited, WorkerExitedData{PID: 11, ExitCode: -1, Signal: "killed", Reason: "crash", Restart: 1},
		EventWorkerStarted, WorkerStartedData{PID: 12, StartTime: 3, Restart: 2})
	s := fold(third)
	if !s.RecoveredBefore("dag/a/1") {
		t.Error("the worker started after the attempt, in the same millisecond, is not said to have recovered it")
	}
	b, err := s.encodePayload()
	if err != nil {
		t.Fatal(err)
	}
	restored := New()
	if err := restored.restorePayload(b, false); err != nil {
		t.Fatal(err)
	}
	if !restored.RecoveredBefore("dag/a/1") {
		t.Error("after the fold snapshot, the recovering worker is no longer told")
	}
}

// TestCrashCutOffClockStops: an attempt a crash cut off, paused for
// reconciliation by the next worker, is settled when the crashed worker's
// end was recorded, not when the pause was (after the restart); one the
// recording worker itself paused is settled at the pause.
func TestCrashCutOffClockStops(t *testing.T) {
	s, err := record(t, append(attemptStarted(t),
		EventWorkerExited, WorkerExitedData{PID: 10, ExitCode: -1, Signal: "killed", Reason: "crash"},
		EventWorkerStarted, WorkerStartedData{PID: 11, StartTime: 2, Restart: 1},
		graph.EventNodePaused, graph.PausedData{Node: "a", Position: "dag/a/1", Request: graph.PauseRequest{Kind: graph.PauseReconcile, Position: "dag/a/1"}},
	)...)
	if err != nil {
		t.Fatal(err)
	}
	p := s.Position("dag/a/1")
	// record spaces events a second apart: started at +3 s, the exit at
	// +4 s, the pause at +6 s.
	if got := p.SettledAt.Sub(p.StartedAt); got != time.Second {
		t.Errorf("the cut-off attempt ran %v, want 1s (to the crashed worker's recorded end)", got)
	}
	s, err = record(t, append(attemptStarted(t),
		graph.EventNodePaused, graph.PausedData{Node: "a", Position: "dag/a/1", Request: graph.PauseRequest{Kind: graph.PauseReconcile, Position: "dag/a/1"}},
	)...)
	if err != nil {
		t.Fatal(err)
	}
	if p := s.Position("dag/a/1"); p.SettledAt.Sub(p.StartedAt) != time.Second {
		t.Errorf("an attempt its own worker paused ran %v, want 1s (to the pause)", p.SettledAt.Sub(p.StartedAt))
	}
}

// attemptStarted is a record up to the start of the attempt at dag/a/1,
// under the run's first worker.
func attemptStarted(t *testing.T) []any {
	return []any{
		graph.EventRunStarted, started(t),
		EventWorkerStarted, WorkerStartedData{PID: 10, StartTime: 1},
		graph.EventNodeDispatched, graph.DispatchedData{Dispatches: []graph.Dispatch{{Node: "a", Position: "dag/a/1"}}},
		graph.EventAttemptStarted, graph.AttemptStartedData{Node: "a", Position: "dag/a/1", AttemptID: "x"},
	}
}
