package watchdog

import (
	"context"
	"errors"
	"testing"

	"github.com/obversa/obversa/host/runstate"
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
