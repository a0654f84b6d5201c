package runstate

import (
	"errors"
	"fmt"
	"time"

	"github.com/obversa/obversa/host/graph"
	"github.com/obversa/obversa/host/plan"
	"github.com/obversa/obversa/internal/runecut"
)

var (
	// ErrNotAwaitingApproval is returned by CheckApproval when the
	// position does not wait for approval (unknown, not paused, paused
	// for something else, or the run already ended).
	ErrNotAwaitingApproval = errors.New("RESUME_POSITION")
	// ErrAlreadyDecided is returned by CheckApproval when the position
	// already has a recorded decision; the message names it and the
	// request that made it.
	ErrAlreadyDecided = errors.New("already decided")
)

// Start returns the run's graph:run-started (nil before it is folded).
func (s *State) Start() *plan.RunStarted { return s.start }

// Plan returns the stored plan.
func (s *State) Plan() *plan.Plan { return s.start.Plan }

// Graph returns the folded graph state (read-only use).
func (s *State) Graph() *graph.State { return s.graph }

// Preflight returns the preflight fold.
func (s *State) Preflight() *PreflightFold { return s.pf }

// Sequence returns the last engine-call sequence recorded for a position
// (0 for none).
func (s *State) Sequence(position string) int {
	s.loadPositions()
	return s.seq[position]
}

// Retired returns the lane targets proved dead so far (lane-dead failures
// and targets preflight blocked). Safe to call from any goroutine.
func (s *State) Retired() []graph.RetiredTarget { return s.retired.snapshot() }

// Finished returns the terminal result (graph:run-finished), or nil.
func (s *State) Finished() *Result { return s.finished }

// FinishedAt returns when the terminal result was recorded.
func (s *State) FinishedAt() time.Time { return s.finishedAt }

// Paused returns the result of the last graph:run-waiting when no
// graph:run-resumed has answered it, else nil.
func (s *State) Paused() *Result { return s.paused }

// Result returns the run's current result: terminal, or paused; nil while
// the run runs.
func (s *State) Result() *Result {
	if s.finished != nil {
		return s.finished
	}
	return s.paused
}

// Phase returns the phase the record shows.
func (s *State) Phase() Phase { return s.phase }

// Worker returns the last worker the record names, or nil.
func (s *State) Worker() *Worker { return s.worker }

// LastExit returns the last worker crash since the last worker started,
// or nil.
func (s *State) LastExit() *Exit { return s.exit }

// LastEventAt returns the commit time of the last event applied from
// the record (zero before any): for a run no watchdog holds, when it was
// last carried on.
func (s *State) LastEventAt() time.Time { return s.lastAt }

// Halted returns when the run was last carried on, and true, when
// nothing carries it on: it has no terminal result, and it is paused (a
// graph:run-waiting no graph:run-resumed answered) or held is false — the
// reader found no live process holding it (the holder's liveness is the
// reader's finding, never the record's, so each view is given it). An
// attempt it left started was cut off then: views show it interrupted
// with its clock stopped at that time, the record's last event
// (docs/decisions.md, "A cut-off attempt ends when the run was
// interrupted").
func (s *State) Halted(held bool) (time.Time, bool) {
	if s.finished != nil || (s.paused == nil && held) {
		return time.Time{}, false
	}
	return s.lastAt, true
}

// PreviousExit returns the recorded crash of the worker before the last
// one the record names (the exit that last worker was started after), or
// nil when that worker's end was not recorded (its watchdog ended too, or
// it ended with a result) or no worker came before it. The executor names
// it as the cause of an attempt the crash cut off (docs/architecture.md#the-executor).
func (s *State) PreviousExit() *Exit { return s.prevExit }

// PreviousEnd returns how the worker before the last one ended, as far as
// the record says: its recorded exit (PreviousExit), else the pause that
// stopped it — a fault of the record (STORAGE_FULL, RUN_STORAGE, …) or an
// operator's pause, as an Exit with the pause's code and message — else
// nil (its end was not recorded: its watchdog ended too, the machine
// stopped, or the record could not be written). The executor names it as
// the cause of an attempt that end cut off (docs/architecture.md#the-executor).
func (s *State) PreviousEnd() *Exit {
	if s.prevExit != nil {
		return s.prevExit
	}
	return s.prevStop
}

// RecoveredBefore reports whether the worker before the last one started
// after position's attempt did: it did not run that attempt but
// recovered it, and ended before it recorded what recovery decided (the
// reconcile pause). PreviousEnd is then that recovering worker's end, not
// the end of the worker that ran the attempt. False when no worker came
// before the last one, or the position has not started. The order is the
// record's (the ordinals of worker starts, Position.StartedUnder), not
// the events' clock times, which have millisecond steps and come from
// several processes: the worker before the last is ordinal workers-1.
func (s *State) RecoveredBefore(position string) bool {
	p := s.Position(position)
	return p != nil && !p.StartedAt.IsZero() && p.StartedUnder < s.workers-1
}

// CleanupVerified returns whether the last cleanup after a worker left no
// process of the run; nil when none was recorded since the last worker
// started.
func (s *State) CleanupVerified() *bool { return s.cleanup }

// Anchor returns the newest workspace snapshot recorded since the last
// worker started (a pause anchor or a crash snapshot), or nil.
func (s *State) Anchor() *SnapshotData { return s.anchor }

// Takeovers returns how many times a watchdog took the run over.
func (s *State) Takeovers() int { return s.takeovers }

// Position returns what the fold knows of a position, or nil.
func (s *State) Position(position string) *Position {
	s.loadPositions()
	return s.pos[position]
}

// PausedPositions returns the paused positions: nodes in declaration
// order, then for_each instances and loop members as they came to be.
func (s *State) PausedPositions() []string {
	if s.graph.Paused() == 0 {
		return nil
	}
	var open []string
	for _, n := range s.graph.Nodes() {
		if n.Status == graph.StatusPaused {
			open = append(open, n.Position)
		}
	}
	return open
}

// AwaitingApproval reports whether some position waits for an approval
// decision not yet recorded.
func (s *State) AwaitingApproval() bool {
	if s.graph.Paused() == 0 {
		return false // without a scan of every unit: the executor asks at every message
	}
	for _, n := range s.graph.Nodes() {
		if n.Status == graph.StatusPaused && n.Pause != nil && n.Pause.Kind == graph.PauseApproval && n.Approved == "" {
			return true
		}
	}
	return false
}

// Request returns the decision recorded for an approval request id.
func (s *State) Request(id string) (graph.ApprovalData, bool) {
	d, ok := s.requests[id]
	return d, ok
}

// CheckApproval returns the node state of a position that waits for an
// approval decision, or an error: ErrNotAwaitingApproval (also for any
// position of a run that already ended), or ErrAlreadyDecided naming the
// decision and the request that made it.
func (s *State) CheckApproval(position string) (*graph.NodeState, error) {
	n := s.graph.AtPosition(position)
	if n != nil && n.Approved != "" {
		// Decided, and perhaps already carried on: the decision stands.
		by := "an operator command"
		for id, d := range s.requests {
			if d.Position == position {
				by = "request " + id
			}
		}
		return nil, fmt.Errorf("%s is %w: %s by %s", position, ErrAlreadyDecided, n.Approved, by)
	}
	if f := s.finished; f != nil {
		// A run that ended (stopped, timed out, failed) keeps its pauses
		// in the fold, but nothing carries it on: a decision recorded now
		// would follow its result.
		ended := string(f.Kind)
		if f.Code != "" {
			ended += " " + f.Code
		}
		return nil, fmt.Errorf("%w: the run already ended (%s), so %s takes no decision any more; nothing was recorded", ErrNotAwaitingApproval, ended, runecut.Bound(position, runecut.EchoBytes))
	}
	if n == nil || n.Status != graph.StatusPaused || n.Pause == nil || n.Pause.Kind != graph.PauseApproval {
		return nil, fmt.Errorf("%w: %s does not wait for approval (paused positions: %v)", ErrNotAwaitingApproval, runecut.Bound(position, runecut.EchoBytes), s.PausedPositions())
	}
	return n, nil
}
