package watchdog

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/obversa/obversa/host/executor"
	"github.com/obversa/obversa/host/plan"
	"github.com/obversa/obversa/host/runstate"
	"github.com/obversa/obversa/host/workspace"
	"github.com/obversa/obversa/internal/proc"
	"github.com/obversa/obversa/plugin"
	"github.com/obversa/obversa/store"
)

// SuperviseOptions configures Supervise.
type SuperviseOptions struct {
	// Exe is the obversa binary that runs `obversa worker`; default
	// os.Executable().
	Exe string
	// Started, when set, is called once the run is supervised — its lock
	// held, an operator's decisions (resume) recorded — before the first
	// worker starts: the moment a live view may start following it.
	Started func()
	// Pause, when it is closed, pauses the run instead of stopping it: the
	// worker is stopped as for a stop, and the run records a resumable
	// pause (OPERATOR_PAUSE) with its pause anchor. Attempts in flight are
	// cut off as by a crash, so `obversa resume` applies the crash table
	// to them. nil never pauses.
	Pause <-chan struct{}
	// Logger receives the watchdog's own log; nil discards.
	Logger hclog.Logger
	// Owner is the run's ownership when the caller already holds it
	// (taken through the run handle given to Supervise); nil takes it.
	// Supervise hands it to each worker and releases it when it returns.
	Owner store.Ownership
	// State is the run's record folded by the caller (which holds Owner);
	// nil folds it afresh.
	State *runstate.State
	// Verified are, by digest, the stamps of plugin cache entries this
	// process has just read in full and found pinned (Prepared.Verified):
	// each worker gets them (VerifiedEnv) and executes an entry that still
	// shows its stamp without hashing it again. nil: workers hash each
	// entry.
	Verified map[string]plugin.FileStamp
	// Prestarted is the run's first worker when the caller started it
	// early (Prestart), for the run this Supervise is given: the first
	// worker takes it over instead of starting one. Supervise stops it if
	// no worker took it. nil starts every worker here.
	Prestarted *Prestarted

	// inProcess, when set, runs each worker in this process instead of as
	// `obversa worker` (the crash simulation, sim_test.go): it is given
	// the supervisor's run handle and returns how the worker ended.
	inProcess func(ctx context.Context, run store.Record, restart int) (*exit, error)
}

// Supervise takes the run's ownership (its process lock, or its lease)
// and runs workers until the run records a result, restarting a crashed worker with backoff
// min(max_backoff, initial_backoff·2^n) up to max_restarts. It enforces the
// run's timeout (from its start, including backoff) and the worker console
// budget, stops every process carrying the run's owner marker after each
// worker, and records the outcome it decides itself (STOPPED when ctx is
// cancelled, TIMEOUT, OUTPUT_LIMIT, RESTART_EXHAUSTED,
// TEARDOWN_INCOMPLETE), and the pause of a worker stopped by a fault of
// the record (executor.Fault: STORAGE_FULL, RUN_STORAGE,
// ARTIFACT_NOT_FOUND, ARTIFACT_INTEGRITY), which uses no restart — when
// the record cannot be read or written to record it (a database that is
// down), that pause is returned unrecorded (unrecordedPause); while
// it runs it keeps the run's reserve file (reserve.go). run is the caller's handle on the run ref names;
// each worker finds the run through ref. It returns store.ErrProcessLocked
// (as *store.LockedError) when another process holds the run, and an error
// wrapping ErrOwnershipLost when the run's lease is lost while it is
// supervised (another host took the run over): the worker and this host's
// processes of the run are stopped and nothing more is recorded.
func Supervise(ctx context.Context, ref Ref, run store.Record, o SuperviseOptions) (*runstate.Result, error) {
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	defer o.Prestarted.Abandon()
	if o.Exe == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, err
		}
		o.Exe = exe
	}
	owner := o.Owner
	if owner == nil {
		var err error
		if owner, err = run.Lock(ctx); err != nil {
			return nil, err
		}
	}
	defer owner.Release()
	_ = proc.SetChildSubreaper()

	state := o.State
	if state == nil {
		var err error
		if state, err = runstate.Load(ctx, run); err != nil {
			return nil, err
		}
	}
	rs := state.Start()
	marker, err := ref.Marker(ctx)
	if err != nil {
		return nil, err
	}
	s := &supervisor{ref: ref, run: run, o: o, owner: owner, lost: lostSignal(owner), plan: rs.Plan, marker: marker, rs: state, reserve: newReserve(run.Dir())}
	if err := s.reserve.ensure(); err != nil {
		o.Logger.Warn("no room reserved for recording a full device", "error", err)
	}
	// Needed only while this watchdog may have to record a full device.
	defer s.reserve.release()
	if o.inProcess == nil {
		k, err := startKeeper(o.Exe, ref.Args(), rs.Plan)
		if err != nil {
			return nil, err
		}
		s.keeper = k
		defer k.close()
	}
	if t := rs.Plan.Timeout(); t > 0 {
		s.deadline = rs.StartedAt.Add(t)
	}
	if o.Started != nil {
		o.Started()
	}
	// What killed processes left of their plugin sockets goes here, in
	// this process: a worker never lists the directory beside its
	// executor (docs/decisions.md, "Plugin socket directories").
	go plugin.SweepSockets()
	res, err := s.loop(ctx)
	if errors.Is(err, store.ErrNotOwner) && !errors.Is(err, ErrOwnershipLost) {
		// A write of this watchdog was refused: the run was taken over
		// before its renewals found out.
		return nil, s.lostOwnership(context.WithoutCancel(ctx), err)
	}
	if err != nil {
		// The record failed under the watchdog's own reads or writes.
		return s.unrecordedPause(context.WithoutCancel(ctx), nil, err)
	}
	// A first worker never handed the run is stopped before the keeper
	// hears that nothing of the run runs.
	o.Prestarted.Abandon()
	if v := s.rs.CleanupVerified(); v != nil && *v {
		s.keeper.release()
	}
	return res, nil
}

// supervisor carries one run under its lock. It appends only while no
// worker lives, each time at the revision of its fold, which it catches
// up with the record once a worker is gone (docs/decisions.md, "One
// writer").
type supervisor struct {
	ref      Ref
	run      store.Record
	o        SuperviseOptions
	owner    store.Ownership
	lost     <-chan struct{} // closed when the ownership is lost; nil never
	plan     *plan.Plan
	marker   string
	reserve  *reserve
	deadline time.Time
	rs       *runstate.State
	keeper   *keeper
}

// loop runs workers until the run records a result or the watchdog
// decides one: each turn readies the workspace, runs one worker, settles
// what it left and, after a crash, waits its backoff.
func (s *supervisor) loop(ctx context.Context) (*runstate.Result, error) {
	// ctx ends when the run is asked to stop; the record is still written
	// after that, so bookkeeping uses a context that is not cancelled.
	rec := context.WithoutCancel(ctx)
	ws := newGuard(s.plan, s.marker)
	defer ws.release()
	var crashSnap *workspace.Snapshot
	// The restart budget is the run's, not this watchdog's: a resumed run
	// goes on counting the workers that crashed before it
	// (docs/decisions.md, "Restart budget").
	for restart := s.rs.Restarts(); ; restart++ {
		if res, done, err := s.ready(rec, ws, crashSnap); done {
			return res, err
		}
		ex, err := s.work(ctx, restart)
		if err != nil {
			return nil, err
		}
		if res, done, err := s.settle(rec, ws, ex); done {
			return res, err
		}
		if res, done, err := s.crashed(rec, ex, restart); done {
			return res, err
		}
		// Snapshot while still holding the lease, then let it go for the
		// backoff.
		if crashSnap, err = ws.save(rec, s, runstate.EventWorkspaceSnapshot); err != nil {
			return nil, err
		}
		ws.release()
		if res, done, err := s.backoff(ctx, rec, restart); done {
			return res, err
		}
	}
}

// ended marks the outcome of a step of the loop as the loop's: the run
// has a result (res) or supervision stops (err).
func ended(res *runstate.Result, err error) (*runstate.Result, bool, error) {
	return res, true, err
}

// ready readies the run for its next worker: the run's timeout has not
// passed, the workspace lease is held and the workspace is as the crashed
// worker left it (crashSnap; nil when none crashed). done is set when the
// run pauses or ends instead.
func (s *supervisor) ready(rec context.Context, ws *guard, crashSnap *workspace.Snapshot) (*runstate.Result, bool, error) {
	if !s.deadline.IsZero() && time.Now().After(s.deadline) {
		return ended(s.finish(rec, CodeTimeout, "the run's timeout passed before a worker could start (limits.timeout counts pauses and the time no watchdog held the run)"))
	}
	// The lease is held while a worker runs; after a crash the
	// workspace must still be as the crashed worker left it.
	if err := ws.acquire(); err != nil {
		if errors.Is(err, workspace.ErrLeaseHeld) {
			return ended(s.pause(rec, CodeWorkspaceLease, err.Error(), nil, nil))
		}
		return ended(nil, err)
	}
	if err := ws.verify(rec, crashSnap); err != nil {
		var de *workspace.DriftError
		if errors.As(err, &de) {
			return ended(s.pause(rec, CodeWorkspaceDrift, err.Error(), crashSnap, de.Changes))
		}
		return ended(nil, err)
	}
	return nil, false, nil
}

// work runs one worker and returns how it ended: as `obversa worker`, or
// in this process under the crash simulation.
func (s *supervisor) work(ctx context.Context, restart int) (*exit, error) {
	if s.o.inProcess != nil {
		return s.o.inProcess(ctx, s.run, restart)
	}
	return s.runWorker(ctx, restart)
}

// settle takes over from a worker that ended: it checks the ownership,
// catches up with what the worker recorded, stops what it left running,
// and returns the result it recorded or the one its end stands for (a
// fault, a stop, a timeout, the console budget, a pause). done is unset
// only when the worker crashed.
func (s *supervisor) settle(rec context.Context, ws *guard, ex *exit) (*runstate.Result, bool, error) {
	if ex.reason == reasonLost || s.isLost() {
		return ended(nil, s.lostOwnership(rec, nil))
	}
	// A record that cannot be fenced or read (the database is down)
	// pauses the run unrecorded, as the worker's fault would.
	if err := s.fence(rec); err != nil {
		return ended(s.unrecordedPause(rec, ex.fault, err))
	}
	// The worker is gone: what it recorded is what the decisions below
	// read, and the revision every append below is conditional on.
	if err := s.rs.CatchUp(rec, s.run); err != nil {
		return ended(s.unrecordedPause(rec, ex.fault, err))
	}
	survivors, err := s.cleanup(rec)
	if err != nil && (ex.fault == nil || executor.FaultOf(err) == nil) {
		return ended(s.unrecordedPause(rec, nil, err))
	}
	if len(survivors) > 0 {
		return ended(s.finish(rec, CodeTeardownIncomplete, fmt.Sprintf("%d processes of the run survived SIGKILL", len(survivors))))
	}
	if res := s.rs.Result(); res != nil {
		if res.Kind == runstate.KindPaused {
			// The runner-pause-anchor: what resume must find.
			if _, err := ws.save(rec, s, runstate.EventPauseAnchor); err != nil {
				return ended(nil, err)
			}
		}
		return ended(res, nil)
	}
	if ex.fault != nil {
		// No restart mends the record: pause (docs/decisions.md,
		// "Storage faults pause the run").
		return ended(s.faultPause(rec, ws, ex.fault))
	}
	switch ex.reason {
	case CodeStopped, CodeTimeout, CodeOutputLimit:
		return ended(s.finish(rec, ex.reason, ex.detail))
	case CodeOperatorPause:
		res, err := s.pause(rec, CodeOperatorPause, s.operatorPauseDetail(ex.detail), nil, nil)
		if err != nil {
			return ended(nil, err)
		}
		if _, err := ws.save(rec, s, runstate.EventPauseAnchor); err != nil {
			return ended(nil, err)
		}
		return ended(res, nil)
	}
	return nil, false, nil
}
