package watchdog

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/obversa/obversa/host/graph"
	"github.com/obversa/obversa/host/runstate"
)

// TestStatusView: a record whose worker is gone while its lock holder
// (this test, standing for the watchdog) lives reads recovering, with the
// worker's pid and the preflight phase; a record that paused lists what it
// waits for.
func TestStatusView(t *testing.T) {
	ctx := context.Background()
	runDir := newRun(t, runstate.EventWorkerStarted, runstate.WorkerStartedData{PID: 999999, StartTime: 1, Restart: 1},
		graph.EventNodeDispatched, graph.DispatchedData{Dispatches: []graph.Dispatch{{Node: "a", Position: "dag/a/1"}}})
	r, err := Status(ctx, DirRef(runDir))
	if err != nil {
		t.Fatal(err)
	}
	if r.Phase != PhaseRecovering || r.Worker == nil || r.Worker.PID != 999999 || r.Worker.Alive || r.RestartCount != 1 ||
		r.Events != 3 || r.Preflight == nil || r.Preflight.Phase != runstate.PreflightDisabled || r.Result != nil {
		t.Fatalf("report %+v", r)
	}
	paused := newRun(t, pausedForApproval()...)
	r, err = Status(ctx, DirRef(paused))
	if err != nil {
		t.Fatal(err)
	}
	if r.Phase != PhasePaused || len(r.PauseReasons) != 1 || r.PauseReasons[0].Position != "dag/a/1" || len(r.Active) != 0 {
		t.Fatalf("paused report %+v", r)
	}
	// Carried on without an answer for a/1 (a resume of another
	// position), then its worker died: nothing recorded since says the
	// run waits, but a/1 still does, and a bare resume is refused until
	// it is answered.
	carried := newRun(t, append(pausedForApproval(),
		graph.EventRunResumed, runstate.RunResumedData{},
		runstate.EventWorkerStarted, runstate.WorkerStartedData{PID: 999999, StartTime: 1})...)
	r, err = Status(ctx, DirRef(carried))
	if err != nil {
		t.Fatal(err)
	}
	if r.Phase != PhaseRecovering || r.Result != nil || len(r.PauseReasons) != 1 || r.PauseReasons[0].Position != "dag/a/1" ||
		r.PauseReasons[0].Kind != graph.PauseApproval {
		t.Fatalf("report of a carried-on run with a/1 still paused: phase %s, result %+v, pause reasons %+v", r.Phase, r.Result, r.PauseReasons)
	}
	if hint := AnswerHints(r.PauseReasons, "R"); hint != "decide dag/a/1 with `obversa approve R dag/a/1`" {
		t.Errorf("AnswerHints = %q", hint)
	}
	// The same, then paused by an operator: the pause recorded names no
	// position, but a/1 still waits.
	operator := newRun(t, append(pausedForApproval(),
		graph.EventRunResumed, runstate.RunResumedData{},
		graph.EventRunWaiting, json.RawMessage(`{"run_id":"r","kind":"paused","code":"OPERATOR_PAUSE","output":{"message":"paused by an operator"}}`))...)
	r, err = Status(ctx, DirRef(operator))
	if err != nil {
		t.Fatal(err)
	}
	if r.Phase != PhasePaused || len(r.PauseReasons) != 2 || r.PauseReasons[0].Kind != "OPERATOR_PAUSE" || r.PauseReasons[1].Position != "dag/a/1" {
		t.Fatalf("report of a run paused by an operator with a/1 still paused: phase %s, pause reasons %+v", r.Phase, r.PauseReasons)
	}
}

// TestStatusElapsedStopsWhilePaused: a paused run's elapsed_ms stops at
// its last event, however late the report is made, as runs and show say
// it; a run a live owner carries on counts up to the report's time.
func TestStatusElapsedStopsWhilePaused(t *testing.T) {
	st := foldOf(t, newRun(t, pausedForApproval()...))
	at, halted := st.Halted(false)
	if !halted {
		t.Fatal("a paused run is not halted")
	}
	want := at.Sub(st.Start().StartedAt).Milliseconds()
	for _, later := range []time.Duration{time.Second, time.Hour} {
		if r := View(st, "m", at.Add(later), Owner{}); r.ElapsedMS != want {
			t.Errorf("paused run reported %v after its last event: elapsed_ms %d, want %d (stopped at its last event)", later, r.ElapsedMS, want)
		}
	}
	st = foldOf(t, newRun(t, runstate.EventWorkerStarted, runstate.WorkerStartedData{PID: 999999, StartTime: 1}))
	now := st.Start().StartedAt.Add(time.Hour)
	if r := View(st, "m", now, Owner{Found: true, Live: true}); r.ElapsedMS != time.Hour.Milliseconds() {
		t.Errorf("held running run: elapsed_ms %d, want %d", r.ElapsedMS, time.Hour.Milliseconds())
	}
}
