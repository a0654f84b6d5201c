package watchdog

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/obversa/obversa/host/runstate"
)

// crashed records the exit of a worker that crashed (the nth restart's
// worker) and ends the run RESTART_EXHAUSTED when no restart is left
// (done).
func (s *supervisor) crashed(rec context.Context, ex *exit, restart int) (*runstate.Result, bool, error) {
	d := runstate.WorkerExitedData{PID: ex.pid, ExitCode: ex.code, Signal: ex.signal, Restart: restart, Reason: runstate.ExitCrash}
	if ex.died != nil {
		d.Code, d.Message, d.Path, d.DiedUnder = ex.died.Code, s.message(ex.died.Problem), ex.died.Path, ex.died.Position
		s.o.Logger.Warn(ex.died.Problem)
	}
	if err := s.record(rec, runstate.EventWorkerExited, d); err != nil {
		return ended(nil, err)
	}
	if restart >= s.plan.Restart.MaxRestarts {
		return ended(s.finish(rec, CodeRestartExhausted, s.exhausted(ex, restart+1)))
	}
	return nil, false, nil
}

// exhausted says why the run's restarts ran out after the stops-th worker
// stopped (ex): how many workers crashed or, when plugins died under
// attempts, how many stopped for that, since a plugin is launched again
// by restarting its worker (docs/decisions.md, "Restart budget"), and
// what ended the last one — for a plugin, its name, binary, exit status or
// signal and the position, and the log holding its stderr.
func (s *supervisor) exhausted(ex *exit, stops int) string {
	deaths := s.rs.PluginDeaths()
	if deaths == 0 {
		detail := fmt.Sprintf("the worker crashed %d times (max_restarts = %d)", stops, s.plan.Restart.MaxRestarts)
		if ex.died != nil {
			detail += "; the last time " + ex.died.Problem
		}
		return detail
	}
	why := "each time"
	if deaths < stops {
		why = fmt.Sprintf("%d of these times", deaths)
	}
	detail := fmt.Sprintf("the worker stopped %d times (max_restarts = %d), %s because a plugin died under an attempt"+
		" (a plugin is launched again by restarting its worker, so its death uses a restart)", stops, s.plan.Restart.MaxRestarts, why)
	switch {
	case ex.died != nil && ex.died.Code == runstate.CodePluginDied:
		detail += "; the last time " + ex.died.Problem + "; what the plugin wrote to stderr is in " + filepath.Join(s.run.Dir(), PluginsLog)
	case ex.died != nil:
		detail += "; the last time " + ex.died.Problem
	default:
		detail += "; the last time the worker " + runstate.WorkerExitedData{ExitCode: ex.code, Signal: ex.signal}.Cause()
	}
	return detail
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
