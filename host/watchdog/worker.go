package watchdog

import (
	"context"
	"errors"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/obversa/obversa/host/executor"
	"github.com/obversa/obversa/host/launch"
	"github.com/obversa/obversa/host/plan"
	"github.com/obversa/obversa/host/runstate"
	"github.com/obversa/obversa/host/stream"
	"github.com/obversa/obversa/internal/failpoint"
	"github.com/obversa/obversa/internal/proc"
	"github.com/obversa/obversa/store"
)

// Work is the body of `obversa worker`: it opens the run ref names, launches
// the plan's plugins from the pinned cache, and runs the executor until the
// run records a result. It stops (cancelling in-flight attempts, recording
// nothing for them) on SIGTERM, SIGINT, or EOF on stdin — the watchdog's
// end of the pipe closing means the watchdog is gone. The first line on
// stdin carries the host variables the worker needs (receiveEnv).
//
// The worker records run:worker-started as its own first append (restart
// is how many workers its watchdog started before it) and from then on is
// the run's only writer until it exits.
//
// When the record cannot be written or read, or cannot give back an
// artifact the run needs (executor.FaultOf), the worker stops and writes
// the fault to its report pipe (ReportFDEnv) for the watchdog to record.
func Work(ctx context.Context, ref Ref, restart int, stdin io.Reader) (res *runstate.Result, err error) {
	holdKeeperPipe()
	holdReportPipe()
	defer func() {
		if err != nil {
			reportFault(err)
		}
	}()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	unwatch, early, err := cancelOnStop(ctx, cancel, stdin)
	if err != nil {
		return nil, err
	}
	defer unwatch()
	// Plugins launched before the hand-over are closed on every return
	// before the record's plan is compared with theirs (adopt).
	defer func() { early.abandon() }() // nil once they are taken; abandon of nil does nothing

	run, state, err := openRunFold(ctx, ref)
	if err != nil {
		return nil, err
	}
	defer run.Close()
	// The watchdog handed the run's ownership over (an inherited
	// descriptor, or a lease named in the environment); Adopt keeps it from plugins and their commands, so no
	// survivor keeps the run locked after the watchdog and worker are gone.
	owner, err := run.Adopt(ctx)
	if err != nil {
		return nil, err
	}
	defer owner.Release()
	if err := state.CatchUp(ctx, run); err != nil {
		return nil, err
	}
	rs := state.Start()
	if res := state.Finished(); res != nil {
		return res, nil
	}

	pol := Policy(rs.Plan)
	logf, err := openLog(run.Dir(), PluginsLog, rs.Plan, pol.KnownSecrets)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	// The plugins start while the worker records its start and readies
	// its executor: a launch is mostly waiting for processes, and nothing
	// a launch does is recorded until the worker's start is. They start
	// after Adopt, or, for a first worker started early, before the
	// hand-over, when the worker holds no descriptor of the run; either
	// way none inherits the run's ownership.
	launches, logger := takeLaunches(ctx, early, rs, pol, logf)
	early = nil
	x, live, err := readyExecutor(ctx, run, state, restart, pol, logger)
	if err != nil {
		launches.abandon()
		return nil, err
	}
	defer live.Close()
	collectStartGarbage()
	set, unlaunched, err := launches.wait()
	if errors.Is(err, launch.ErrPluginChanged) {
		// The pinned bytes are gone: no restart can bring them back.
		return pluginChanged(ctx, run, state, err)
	}
	if err != nil {
		return nil, err
	}
	defer set.Close()
	usePlugins(x, set, rs.Plan, unlaunched)
	defer saveSnapshot(run, state, logger)
	clock := startCPUClock(set.Clients())
	defer func() {
		if err := clock.stop(); err != nil {
			logger.Warn("CPU time not written", "env", CPUTimeEnv, "error", err)
		}
	}()
	return execute(ctx, x, rs.Plan)
}

// readyExecutor records the worker's start, its first append
// (run:worker-started), and makes the executor that writes the run's live
// stream, which the caller closes.
func readyExecutor(ctx context.Context, run store.Record, state *runstate.State, restart int, pol store.Policy, logger hclog.Logger) (*executor.Executor, *stream.Writer, error) {
	if err := recordWorkerStarted(ctx, run, state, restart); err != nil {
		return nil, nil, err
	}
	if failpoint.Enabled && failpoint.Flooding() {
		flood(os.Stdout)
	}
	p := state.Start().Plan
	live, err := stream.Open(run.Dir(), stream.Options{MaxBytes: p.Storage.MaxStreamBytes, Secrets: pol.KnownSecrets})
	if err != nil {
		return nil, nil, besideRecord(filepath.Join(run.Dir(), stream.FileName), err)
	}
	x, err := executor.New(executor.Options{Run: run, State: state, Logger: logger, Requests: newRequestQueue(run.Dir()), Stream: live,
		Redactor: store.NewPolicyRedactor(pol)})
	if err != nil {
		live.Close()
		return nil, nil, err
	}
	return x, live, nil
}

// cancelOnStop calls cancel on SIGTERM or SIGINT and, when stdin is not
// nil, once stdin ends after its first line (the host variables,
// receiveEnv), which means the watchdog is gone. unwatch stops the signal
// watch. A first worker started early (HandoffEnv) reads the early line
// and the hand-over (receiveEarlyHandoff) and returns its early launch.
func cancelOnStop(ctx context.Context, cancel context.CancelFunc, stdin io.Reader) (unwatch func(), early *earlyLaunch, err error) {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	unwatch = func() { signal.Stop(sig) }
	go func() {
		select {
		case <-sig:
			cancel()
		case <-ctx.Done():
		}
	}()
	if stdin != nil {
		if f, ok := stdin.(*os.File); ok && os.Getenv(HandoffEnv) == "1" {
			early, stdin, err = receiveEarlyHandoff(ctx, f)
		} else {
			stdin, err = receiveEnv(stdin)
		}
		if err != nil {
			unwatch()
			return nil, nil, err
		}
		go func() {
			_, _ = io.Copy(io.Discard, stdin)
			cancel()
		}()
	}
	return unwatch, early, nil
}

// receiveEarlyHandoff reads a first worker's early line (receiveEarly),
// launches its plan's plugins (launchEarly) and, meanwhile, waits for the
// hand-over (receiveHandoff). When the hand-over does not come — the
// watchdog is gone or gave the run up — the plugins are closed before it
// returns. Errors are receiveEarly's and receiveHandoff's.
func receiveEarlyHandoff(ctx context.Context, stdin *os.File) (*earlyLaunch, io.Reader, error) {
	p, err := receiveEarly(stdin)
	if err != nil {
		return nil, stdin, err
	}
	early := launchEarly(ctx, p)
	if failpoint.Enabled && failpoint.Armed(ctx, failpoint.EarlyLaunched, "") {
		r := <-early.launches.done
		early.launches.done <- r
		failpoint.Hit(ctx, failpoint.EarlyLaunched, "")
	}
	rest, err := receiveHandoff(stdin)
	if err != nil {
		early.abandon()
		return nil, rest, err
	}
	return early, rest, nil
}

// execute runs x until the run records a result, or until ctx ends and
// the worker stops: then it returns context.Canceled.
func execute(ctx context.Context, x *executor.Executor, p *plan.Plan) (*runstate.Result, error) {
	type outcome struct {
		res *runstate.Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := x.Execute(ctx)
		done <- outcome{res, err}
	}()
	select {
	case o := <-done:
		if o.err == nil || ctx.Err() == nil {
			return o.res, o.err
		}
	case <-ctx.Done():
	}
	// Stopping (the watchdog asked, or is gone): give in-flight attempts
	// the teardown grace to return, then stop every process of the run but
	// this one, so nothing outlives a worker whose watchdog died.
	grace := p.TeardownGrace()
	select {
	case <-done:
	case <-time.After(grace):
	}
	stopOwned(grace)
	return nil, context.Canceled
}

// recordWorkerStarted is a worker's first append, at the revision it
// folded: run:worker-started with its pid and start time. From here until
// it exits, the worker is the run's only writer.
func recordWorkerStarted(ctx context.Context, run store.Record, state *runstate.State, restart int) error {
	if failpoint.Enabled {
		failpoint.Hit(ctx, failpoint.WorkerStart, "")
	}
	st, _ := proc.Stat(os.Getpid())
	return appendFolded(ctx, run, state, store.NewEvent{Type: runstate.EventWorkerStarted,
		Data: runstate.WorkerStartedData{PID: os.Getpid(), StartTime: st.StartTime, Restart: restart}})
}

// stopOwned stops every process carrying this process's owner marker,
// except this process: TERM, grace, KILL.
func stopOwned(grace time.Duration) {
	if marker := os.Getenv(launch.OwnerEnv); marker != "" {
		stopRun(context.Background(), marker, grace)
	}
}

// pluginChanged records the terminal PLUGIN_CHANGED result, before the
// executor ran (its fold is the worker's).
func pluginChanged(ctx context.Context, run store.Record, st *runstate.State, cause error) (*runstate.Result, error) {
	res := runstate.Message(st.Plan().RunID, runstate.KindFail, CodePluginChanged, cause.Error())
	if err := endRun(ctx, run, st, res); err != nil {
		return nil, err
	}
	return res, nil
}

// openRun is openRunFold for the commands a person runs to write a stored
// run (resume, approve, stop, preflight interrupt). Nothing is written
// before it returns, so its errors match ErrNothingRecorded and say so: a
// record the command may not write, such as one on a read-only file
// system, fails here, and the command refuses without a change.
func openRun(ctx context.Context, ref Ref) (store.Record, *runstate.State, error) {
	run, st, err := openRunFold(ctx, ref)
	if err != nil {
		return nil, nil, &notRecordedError{err: err}
	}
	return run, st, nil
}

// notRecordedError is an openRun error: err, and that nothing was
// recorded.
type notRecordedError struct{ err error }

func (e *notRecordedError) Error() string   { return e.err.Error() + "; " + ErrNothingRecorded.Error() }
func (e *notRecordedError) Unwrap() []error { return []error{e.err, ErrNothingRecorded} }

// openRunFold opens the run ref names under the record policy of its own
// plan (the plan is read first, through a handle without policy) and
// folds its record. The worker and the keeper open a run with it: what
// they fail with goes to the watchdog and the logs, where "nothing was
// recorded" would say nothing anybody asked.
func openRunFold(ctx context.Context, ref Ref) (store.Record, *runstate.State, error) {
	probe, err := ref.Open(ctx, store.Policy{})
	if err != nil {
		return nil, nil, err
	}
	state, err := runstate.LoadStart(ctx, probe)
	probe.Close()
	if err != nil {
		return nil, nil, err
	}
	run, err := ref.Open(ctx, Policy(state.Start().Plan))
	if err != nil {
		return nil, nil, err
	}
	// The start was folded through the probe; the rest of the record
	// through the handle that keeps the run's policy.
	if err := state.CatchUp(ctx, run); err != nil {
		run.Close()
		return nil, nil, err
	}
	return run, state, nil
}

// flood writes to w until the write fails or the process is stopped (the
// failpoint.Flood crash test).
func flood(w *os.File) {
	line := []byte(strings.Repeat("flood ", 16) + "\n")
	for {
		if _, err := w.Write(line); err != nil {
			return
		}
	}
}
