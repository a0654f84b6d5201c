package watchdog

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/obversa/obversa/host/graph"
	"github.com/obversa/obversa/host/runstate"
	"github.com/obversa/obversa/store"
)

// TestStopIdle: a paused run with no watchdog is ended STOPPED at the
// revision read under its lock; an ended run is left alone.
func TestStopIdle(t *testing.T) {
	ctx := context.Background()
	runDir := newRun(t, pausedForApproval()...)
	res, err := StopIdle(ctx, DirRef(runDir))
	if err != nil || res.Code != CodeStopped || res.Kind != runstate.KindFail {
		t.Fatalf("StopIdle: %+v %v", res, err)
	}
	if res, err := StopIdle(ctx, DirRef(runDir)); !errors.Is(err, ErrAlreadyEnded) || res.Code != CodeStopped {
		t.Fatalf("second StopIdle: %+v %v", res, err)
	}
	r, err := Status(ctx, DirRef(runDir))
	if err != nil || r.Phase != PhaseStopped {
		t.Fatalf("status %+v %v", r, err)
	}
}

// TestStopIdleCutOffAtInterrupt: stopping a run interrupted while an
// attempt ran ends that attempt ABORTED at the time the run was last
// recorded, not at the stop: its elapsed time is what it ran before the
// interruption, and the failure says it was interrupted.
func TestStopIdleCutOffAtInterrupt(t *testing.T) {
	ctx := context.Background()
	runDir := newRun(t,
		graph.EventNodeDispatched, graph.DispatchedData{Dispatches: []graph.Dispatch{{Node: "a", Position: "dag/a/1"}}},
		graph.EventAttemptStarted, graph.AttemptStartedData{Node: "a", Position: "dag/a/1"},
	)
	time.Sleep(50 * time.Millisecond) // the interruption lasts
	if _, err := StopIdle(ctx, DirRef(runDir)); err != nil {
		t.Fatal(err)
	}
	run, err := store.OpenRunDirReadOnly(ctx, runDir)
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	st, err := runstate.Load(ctx, run)
	if err != nil {
		t.Fatal(err)
	}
	p := st.Position("dag/a/1")
	if p == nil || p.StartedAt.IsZero() || !p.SettledAt.Equal(p.StartedAt) {
		t.Fatalf("position %+v: want it settled when the run was last recorded (its start), not at the stop", p)
	}
	var msg string
	if err := run.Read(ctx, 1, func(e store.Event) error {
		if e.Type == graph.EventNodeFailed {
			var f graph.FailedData
			if err := json.Unmarshal(e.Data, &f); err != nil {
				return err
			}
			msg = f.Message
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(msg, "interrupted while the attempt was running") {
		t.Errorf("the failure says %q; want it to say the run was interrupted", msg)
	}
}
