package watchdog

import (
	"context"
	"fmt"
	"time"

	"github.com/obversa/obversa/host/runstate"
)

// crashed records the exit of a worker that crashed (the nth restart's
// worker) and ends the run RESTART_EXHAUSTED when no restart is left
// (done).
func (s *supervisor) crashed(rec context.Context, ex *exit, restart int) (*runstate.Result, bool, error) {
	d := runstate.WorkerExitedData{PID: ex.pid, ExitCode: ex.code, Signal: ex.signal, Restart: restart, Reason: runstate.ExitCrash}
	if ex.died != nil {
		d.Code, d.Message, d.Path = ex.died.Code, s.message(ex.died.Problem), ex.died.Path
		s.o.Logger.Warn(ex.died.Problem)
	}
	if err := s.record(rec, runstate.EventWorkerExited, d); err != nil {
		return ended(nil, err)
	}
	if restart >= s.plan.Restart.MaxRestarts {
		detail := fmt.Sprintf("the worker crashed %d times (max_restarts = %d)", restart+1, s.plan.Restart.MaxRestarts)
		if ex.died != nil {
			detail += "; the last time " + ex.died.Problem
		}
		return ended(s.finish(rec, CodeRestartExhausted, detail))
	}
	return nil, false, nil
}

// backoff waits the backoff after the crash of restart's worker. done is
// set when the wait is cut short: the run is stopped (ctx), its timeout
// passes, or the ownership is lost.
func (s *supervisor) backoff(ctx, rec context.Context, restart int) (*runstate.Result, bool, error) {
	wait := s.plan.Restart.Backoff(restart)
	s.o.Logger.Info("worker crashed; restarting", "restart", restart+1, "backoff", wait)
	if s.sleep(ctx, wait) {
		return nil, false, nil
	}
	if s.isLost() {
		return ended(nil, s.lostOwnership(rec, nil))
	}
	if ctx.Err() != nil {
		return ended(s.finish(rec, CodeStopped, "stopped during backoff"))
	}
	return ended(s.finish(rec, CodeTimeout, "the run's timeout passed during backoff"))
}

// sleep waits d, or less when the deadline or ctx ends first, or the
// ownership is lost (false).
func (s *supervisor) sleep(ctx context.Context, d time.Duration) bool {
	whole := s.deadline.IsZero() || time.Until(s.deadline) >= d
	if !whole {
		d = max(time.Until(s.deadline), 0)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-s.lost:
		return false
	case <-t.C:
		return whole
	}
}
