package watchdog

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/hashicorp/go-hclog"

	"github.com/obversa/obversa/host/executor"
	"github.com/obversa/obversa/host/graph"
	"github.com/obversa/obversa/host/launch"
	"github.com/obversa/obversa/host/plan"
	"github.com/obversa/obversa/host/runstate"
	"github.com/obversa/obversa/host/workspace"
	"github.com/obversa/obversa/internal/proc"
	"github.com/obversa/obversa/store"
)

// MaxWorkerOutput is the worker console budget in bytes (docs/architecture.md#the-watchdog).
const MaxWorkerOutput = 1_000_000

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
// ARTIFACT_NOT_FOUND, ARTIFACT_INTEGRITY), which uses no restart; while
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
	res, err := s.loop(ctx)
	if errors.Is(err, store.ErrNotOwner) && !errors.Is(err, ErrOwnershipLost) {
		// A write of this watchdog was refused: the run was taken over
		// before its renewals found out.
		return nil, s.lostOwnership(context.WithoutCancel(ctx), err)
	}
	return res, err
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
		if !s.deadline.IsZero() && time.Now().After(s.deadline) {
			return s.finish(rec, CodeTimeout, "the run's timeout passed before a worker could start")
		}
		// The lease is held while a worker runs; after a crash the
		// workspace must still be as the crashed worker left it.
		if err := ws.acquire(); err != nil {
			if errors.Is(err, workspace.ErrLeaseHeld) {
				return s.pause(rec, CodeWorkspaceLease, err.Error(), nil, nil)
			}
			return nil, err
		}
		if err := ws.verify(rec, crashSnap); err != nil {
			var de *workspace.DriftError
			if errors.As(err, &de) {
				return s.pause(rec, CodeWorkspaceDrift, err.Error(), crashSnap, de.Changes)
			}
			return nil, err
		}
		var ex *exit
		var err error
		if s.o.inProcess != nil {
			ex, err = s.o.inProcess(ctx, s.run, restart)
		} else {
			ex, err = s.runWorker(ctx, restart)
		}
		if err != nil {
			return nil, err
		}
		if ex.reason == reasonLost || s.isLost() {
			return nil, s.lostOwnership(rec, nil)
		}
		if err := s.fence(rec); err != nil {
			return nil, err
		}
		// The worker is gone: what it recorded is what the decisions below
		// read, and the revision every append below is conditional on.
		if err := s.rs.CatchUp(rec, s.run); err != nil {
			return nil, err
		}
		survivors, err := s.cleanup(rec)
		if err != nil && (ex.fault == nil || executor.FaultOf(err) == nil) {
			return nil, err
		}
		if len(survivors) > 0 {
			return s.finish(rec, CodeTeardownIncomplete, fmt.Sprintf("%d processes of the run survived SIGKILL", len(survivors)))
		}
		if res := s.rs.Result(); res != nil {
			if res.Kind == runstate.KindPaused {
				// The runner-pause-anchor: what resume must find.
				if _, err := ws.save(rec, s, runstate.EventPauseAnchor); err != nil {
					return nil, err
				}
			}
			return res, nil
		}
		if ex.fault != nil {
			// No restart mends the record: pause (docs/decisions.md,
			// "Storage faults pause the run").
			return s.faultPause(rec, ws, ex.fault)
		}
		switch ex.reason {
		case CodeStopped, CodeTimeout, CodeOutputLimit:
			return s.finish(rec, ex.reason, ex.detail)
		case CodeOperatorPause:
			res, err := s.pause(rec, CodeOperatorPause, ex.detail, nil, nil)
			if err != nil {
				return nil, err
			}
			if _, err := ws.save(rec, s, runstate.EventPauseAnchor); err != nil {
				return nil, err
			}
			return res, nil
		}
		if err := s.record(rec, runstate.EventWorkerExited, runstate.WorkerExitedData{PID: ex.pid, ExitCode: ex.code, Signal: ex.signal, Restart: restart, Reason: "crash"}); err != nil {
			return nil, err
		}
		if restart >= s.plan.Restart.MaxRestarts {
			return s.finish(rec, CodeRestartExhausted, fmt.Sprintf("the worker crashed %d times (max_restarts = %d)", restart+1, s.plan.Restart.MaxRestarts))
		}
		// Snapshot while still holding the lease, then let it go for the
		// backoff.
		if crashSnap, err = ws.save(rec, s, runstate.EventWorkspaceSnapshot); err != nil {
			return nil, err
		}
		ws.release()
		wait := s.plan.Restart.Backoff(restart)
		s.o.Logger.Info("worker crashed; restarting", "restart", restart+1, "backoff", wait)
		if !s.sleep(ctx, wait) {
			if s.isLost() {
				return nil, s.lostOwnership(rec, nil)
			}
			if ctx.Err() != nil {
				return s.finish(rec, CodeStopped, "stopped during backoff")
			}
			return s.finish(rec, CodeTimeout, "the run's timeout passed during backoff")
		}
	}
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

// exit describes how a worker ended.
type exit struct {
	pid    int
	code   int
	signal string
	reason string // "", CodeStopped, CodeOperatorPause, CodeTimeout, CodeOutputLimit, reasonLost
	detail string
	// fault is what the worker reported stopped it (report.go), nil
	// for none.
	fault *executor.Fault
}

// runWorker starts one worker and waits for it, enforcing the deadline,
// the console budget and ctx (stop).
func (s *supervisor) runWorker(ctx context.Context, restart int) (ex *exit, err error) {
	logf, err := openLog(s.run.Dir(), WorkerLog, s.plan, Policy(s.plan).KnownSecrets)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	out := &limitWriter{w: logf, limit: MaxWorkerOutput, over: make(chan struct{})}
	args := append(append([]string{"worker"}, s.ref.Args()...), "--restart", strconv.Itoa(restart))
	cmd := exec.Command(s.o.Exe, args...)
	env, files := s.owner.Handoff()
	files, env = s.keeper.handOn(files, env)
	report, err := newReportPipe()
	if err != nil {
		return nil, err
	}
	files, env = report.handOn(files, env)
	cmd.Env = workerEnv(s.marker, env)
	cmd.ExtraFiles = files
	cmd.Stdout, cmd.Stderr = out, out
	// The worker watches its stdin: EOF means the watchdog is gone.
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	defer stdin.Close()
	cmd.SysProcAttr = workerSysProcAttr()
	if err := startLocked(cmd); err != nil {
		report.close()
		return nil, fmt.Errorf("starting worker: %w", err)
	}
	report.started()
	// Whatever ended the worker, what it reported is read once it is gone.
	defer func() { ex.fault = report.fault() }()
	// A worker gone before reading it is seen when it is waited for.
	_ = sendEnv(stdin, s.plan)
	// The worker records run:worker-started itself, as its first append:
	// from here until it is gone, it is the run's only writer.
	pid := cmd.Process.Pid
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()

	var deadline <-chan time.Time
	if !s.deadline.IsZero() {
		t := time.NewTimer(max(time.Until(s.deadline), 0))
		defer t.Stop()
		deadline = t.C
	}
	ex = &exit{pid: pid}
	grace := s.plan.TeardownGrace()
	select {
	case err := <-waited:
		fillExit(ex, err)
		return ex, nil
	case <-ctx.Done():
		ex.reason, ex.detail = CodeStopped, "stopped by request"
	case <-s.o.Pause:
		ex.reason, ex.detail = CodeOperatorPause, "paused by obversa stop --pause; carry it on with obversa resume"
	case <-deadline:
		ex.reason, ex.detail = CodeTimeout, fmt.Sprintf("the run's timeout of %s passed", s.plan.Timeout())
	case <-out.over:
		ex.reason, ex.detail = CodeOutputLimit, fmt.Sprintf("the worker wrote more than %d bytes to its console", MaxWorkerOutput)
	case <-s.lost:
		ex.reason, ex.detail = reasonLost, "the run's ownership was lost"
	}
	// Stop the worker's group: TERM, grace, KILL.
	_ = syscall.Kill(-pid, syscall.SIGTERM)
	select {
	case err := <-waited:
		fillExit(ex, err)
	case <-time.After(grace):
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		fillExit(ex, <-waited)
	}
	return ex, nil
}

func fillExit(ex *exit, err error) {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		ex.code = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			ex.signal = ws.Signal().String()
		}
	}
}

func withoutOwner(env []string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, launch.OwnerEnv+"=") && !strings.HasPrefix(kv, store.LockFDEnv+"=") {
			out = append(out, kv)
		}
	}
	return out
}

// cleanup stops every process carrying the run's marker (the worker's
// plugins and their commands, whatever group they moved to), records what
// it stopped, and returns the survivors.
func (s *supervisor) cleanup(ctx context.Context) ([]proc.Proc, error) {
	reapOrphans()
	marked, left := stopRun(ctx, s.marker, s.plan.TeardownGrace())
	if len(marked) > 0 {
		reapOrphans()
	}
	// Recorded even when nothing was found: status then says the cleanup
	// after this worker was verified (cleanup_verified), whatever ended it.
	return left, s.record(ctx, runstate.EventCleanup, runstate.NewCleanup(marked, left))
}

// stopRun stops every process carrying the owner marker, and their
// descendants, except this process: frozen, then TERM, grace, KILL,
// verified by (pid, start time). It returns
// the processes it found and those that survived.
func stopRun(ctx context.Context, marker string, grace time.Duration) (found, left []proc.Proc) {
	return proc.StopTree(ctx, launch.OwnerEnv+"="+marker, map[int]bool{os.Getpid(): true}, grace)
}

// record appends one watchdog event at the revision of the supervisor's
// fold and folds it. It runs only while no worker lives; a conflict means
// another process wrote the run and is returned as is.
//
// A record refused for a full device is tried once more after the run's
// reserve file is removed (reserve.go): what the watchdog records is what
// explains the run's state.
func (s *supervisor) record(ctx context.Context, typ string, data any) error {
	err := appendFolded(ctx, s.run, s.rs, store.NewEvent{Type: typ, Data: data})
	if errors.Is(err, store.ErrStorageFull) && s.reserve.release() {
		s.o.Logger.Warn("the device is full; the reserved room is used to record it", "error", err)
		err = appendFolded(ctx, s.run, s.rs, store.NewEvent{Type: typ, Data: data})
	}
	return err
}

// faultPause records the pause a worker's fault stands for, and the pause
// anchor when the record can take it. When not even the pause can be
// recorded, the result says so and is returned unrecorded: the record
// then shows a worker that ended without a result, which `obversa resume`
// takes over once the record can be written.
func (s *supervisor) faultPause(ctx context.Context, ws *guard, f *executor.Fault) (*runstate.Result, error) {
	res := f.Result(s.plan.RunID)
	res.Output.Message = s.message(res.Output.Message)
	if err := s.record(ctx, graph.EventRunWaiting, res); err != nil {
		if executor.FaultOf(err) == nil {
			return nil, err
		}
		res.Output.Message += fmt.Sprintf(" (this pause could not be recorded either: %v)", err)
		return res, nil
	}
	if _, err := ws.save(ctx, s, runstate.EventPauseAnchor); err != nil {
		if executor.FaultOf(err) == nil {
			return nil, err
		}
		// Without an anchor, resume checks the workspace as after a
		// crash (checkWorkspace).
		s.o.Logger.Warn("the pause anchor could not be recorded", "error", err)
	}
	return res, nil
}

// finish records a result the watchdog decided.
func (s *supervisor) finish(ctx context.Context, code, detail string) (*runstate.Result, error) {
	if s.rs.CleanupVerified() == nil {
		// No cleanup since the last worker (none ran under this
		// watchdog): look now, so the result says what is left.
		if _, err := s.cleanup(ctx); err != nil {
			return nil, err
		}
	}
	res := runstate.Message(s.plan.RunID, runstate.KindFail, code, s.message(detail))
	if err := endRun(ctx, s.run, s.rs, res); err != nil {
		return nil, err
	}
	return res, nil
}

// maxMessageBytes bounds a message the watchdog records (a result's, a
// worker exit's cause), so that no message can make its event too large.
const maxMessageBytes = 4096

// message is text as the watchdog records it: known secrets redacted, cut
// to maxMessageBytes.
func (s *supervisor) message(text string) string {
	return capText(redactor(Policy(s.plan))(text), maxMessageBytes)
}

// capText cuts text to at most n bytes on a rune boundary, marking the cut.
func capText(text string, n int) string {
	if len(text) <= n {
		return text
	}
	const mark = " … (cut)"
	cut := n - len(mark)
	for cut > 0 && !utf8.RuneStart(text[cut]) {
		cut--
	}
	return text[:cut] + mark
}
