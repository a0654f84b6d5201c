package watchdog

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/obversa/obversa/host/graph"
	"github.com/obversa/obversa/host/runstate"
)

// TestOperatorEventsRefuse: resume --position refuses a run with no
// paused position (RUN_NOT_PAUSED) and a position that is not the open
// one (RESUME_POSITION), naming what is open; the open one is offered
// again.
func TestOperatorEventsRefuse(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name     string
		events   []any
		position string
		want     error
	}{
		{"nothing paused", nil, "dag/a/1", ErrRunNotPaused},
		{"another position", pausedForApproval(), "dag/a/2", ErrResumePosition},
		{"the paused position", pausedForApproval(), "dag/a/1", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			run, st, err := openRun(ctx, DirRef(newRun(t, tt.events...)))
			if err != nil {
				t.Fatal(err)
			}
			defer run.Close()
			ev, err := operatorEvents(st, ResumeOptions{Position: tt.position}, "RUN")
			switch {
			case tt.want != nil && (!errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.position)):
				t.Errorf("operatorEvents = %v, %v; want %v naming %s", ev, err, tt.want, tt.position)
			case tt.want == nil && (err != nil || len(ev) != 1 || ev[0].Type != graph.EventNodeResumed):
				t.Errorf("operatorEvents = %v, %v; want node-resumed", ev, err)
			}
		})
	}
}

// TestOperatorEventsEchoBounded: a position pasted by mistake (100 000
// bytes) is named in the refusal cut to runecut.EchoBytes with its length,
// not echoed whole.
func TestOperatorEventsEchoBounded(t *testing.T) {
	ctx := context.Background()
	run, st, err := openRun(ctx, DirRef(newRun(t, pausedForApproval()...)))
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	_, err = operatorEvents(st, ResumeOptions{Position: strings.Repeat("x", 100_000)}, "RUN")
	if !errors.Is(err, ErrResumePosition) || len(err.Error()) > 400 || !strings.Contains(err.Error(), "(100000 bytes in all)") || !strings.Contains(err.Error(), "dag/a/1") {
		t.Errorf("refusal of a 100 000-byte position: %.300v (%d bytes)", err, len(fmt.Sprint(err)))
	}
}

// TestCheckFinishedPreflightNames: --preflight on an ended run is refused
// RESUME_EVENT_MISMATCH naming how it ended — its kind, and its code when
// it has one, with no stray space for a run that completed.
func TestCheckFinishedPreflightNames(t *testing.T) {
	for _, tt := range []struct {
		res  runstate.Result
		want string
	}{
		{runstate.Result{Kind: runstate.KindComplete}, "(complete);"},
		{runstate.Result{Kind: runstate.KindFail, Code: "NODE_FAILED"}, "(fail NODE_FAILED);"},
	} {
		err := checkFinished(context.Background(), nil, nil, &tt.res, nil, "", ResumeOptions{Preflight: "x"})
		if !errors.Is(err, ErrResumeEventMismatch) || !strings.Contains(err.Error(), "already ended "+tt.want) {
			t.Errorf("checkFinished of a %s run: %v, want RESUME_EVENT_MISMATCH and %q", tt.res.Kind, err, tt.want)
		}
	}
}
