package watchdog

import (
	"context"
	"errors"
	"fmt"
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
	"github.com/obversa/obversa/plugin"
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
	unwatch, err := cancelOnStop(ctx, cancel, stdin)
	if err != nil {
		return nil, err
	}
	defer unwatch()

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
	logger := hclog.New(&hclog.LoggerOptions{Name: "plugin", Output: logf, Level: hclog.Debug, JSONFormat: true})

	// The plugins start while the worker records its start and readies
	// its executor: a launch is mostly waiting for processes, and nothing
	// a launch does is recorded until the worker's start is. They start
	// after Adopt, so none inherits the run's ownership.
	launches := launchPlugins(ctx, rs.Plan, pol, logger)
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

// pluginLaunches is startPlugins running on a goroutine of its own.
type pluginLaunches struct {
	done   chan pluginLaunch
	cancel context.CancelFunc
}

// pluginLaunch is what startPlugins returned.
type pluginLaunch struct {
	set        *launch.Set
	unlaunched map[string]error
	err        error
}

// launchPlugins starts startPlugins and returns at once.
func launchPlugins(ctx context.Context, p *plan.Plan, pol store.Policy, logger hclog.Logger) *pluginLaunches {
	ctx, cancel := context.WithCancel(ctx)
	l := &pluginLaunches{done: make(chan pluginLaunch, 1), cancel: cancel}
	go func() {
		set, unlaunched, err := startPlugins(ctx, p, pol, logger)
		l.done <- pluginLaunch{set, unlaunched, err}
	}()
	return l
}

// wait returns what startPlugins returned, once it has.
func (l *pluginLaunches) wait() (*launch.Set, map[string]error, error) {
	r := <-l.done
	return r.set, r.unlaunched, r.err
}

// abandon ends the launches (a launch's context bounds only its start)
// and closes whatever started, for a worker that returns before it uses
// its plugins.
func (l *pluginLaunches) abandon() {
	l.cancel()
	if set, _, _ := l.wait(); set != nil {
		_ = set.Close()
	}
}

// startPlugins launches the run's plugins from the plugin cache
// (launch.StartEach), an entry that still shows the stamp the watchdog
// handed on (VerifiedEnv) without hashing it again. A plugin that does not
// start is the run's to answer for, not a crash to restart
// (docs/decisions.md, "A plugin that does not start in the worker"): it is
// in unlaunched, and preflight or the executor records it. Errors are
// StartEach's.
func startPlugins(ctx context.Context, p *plan.Plan, pol store.Policy, logger hclog.Logger) (*launch.Set, map[string]error, error) {
	stamps, err := decodeStamps(os.Getenv(VerifiedEnv))
	if err != nil {
		// Without stamps every cache entry is hashed: slower, as safe.
		logger.Warn("the watchdog's stamps of the plugin cache are unreadable; hashing every entry", "error", err)
	}
	return launch.StartEach(ctx, p.Plugins, launch.Options{StorageDir: p.Storage.Directory, Logger: logger, Redact: redactor(pol),
		Run: RunOf(p), Supervised: true, Stamps: stamps})
}

// cancelOnStop calls cancel on SIGTERM or SIGINT and, when stdin is not
// nil, once stdin ends after its first line (the host variables,
// receiveEnv), which means the watchdog is gone. unwatch stops the signal
// watch.
func cancelOnStop(ctx context.Context, cancel context.CancelFunc, stdin io.Reader) (unwatch func(), err error) {
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
			stdin, err = receiveHandoff(f)
		} else {
			stdin, err = receiveEnv(stdin)
		}
		if err != nil {
			unwatch()
			return nil, err
		}
		go func() {
			_, _ = io.Copy(io.Discard, stdin)
			cancel()
		}()
	}
	return unwatch, nil
}

// usePlugins hands the launched plugins to x, with the preflight view of
// them and of those that did not start.
func usePlugins(x *executor.Executor, set *launch.Set, p *plan.Plan, unlaunched map[string]error) {
	x.SetPlugins(set.Engines(), set.Bindings())
	x.SetPolicies(set.Policies())
	x.SetMemoryWatch(set)
	x.SetUnlaunched(unlaunched)
	x.SetProbes(probes(set, p, unlaunched))
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

// probes is the preflight view of the launched engine plugins: the cached
// binary each was launched from, its health check, whether it admits, and
// how to stop it. An engine plugin that did not start fails its health
// check with the cause.
func probes(set *launch.Set, p *plan.Plan, unlaunched map[string]error) map[string]executor.PluginProbe {
	out := map[string]executor.PluginProbe{}
	for name, cause := range unlaunched {
		if pp, ok := p.Plugin(name); ok && pp.Type == string(plugin.TypeEngine) {
			out[name] = executor.PluginProbe{Binary: launch.CachePath(p.Storage.Directory, pp.SHA256),
				Health: func(context.Context) error { return fmt.Errorf("the plugin did not start in the worker: %w", cause) }}
		}
	}
	clients, descs := set.Clients(), set.Descriptions()
	for name := range set.Engines() {
		pp, ok := p.Plugin(name)
		c := clients[name]
		if !ok || c == nil {
			continue
		}
		probe := executor.PluginProbe{Binary: launch.CachePath(p.Storage.Directory, pp.SHA256), Health: c.Health, Stop: func() { _ = c.Close() }}
		if d := descs[name]; d != nil {
			probe.NoAdmit = !d.Capabilities.Admit
		}
		out[name] = probe
	}
	return out
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
		return nil, nil, &notRecordedError{err: err, advice: recordAdvice(err, ref)}
	}
	return run, st, nil
}

// notRecordedError is an openRun error: err, that nothing was recorded,
// and what to do about it when recordAdvice knows.
type notRecordedError struct {
	err    error
	advice string
}

func (e *notRecordedError) Error() string {
	msg := e.err.Error() + "; " + ErrNothingRecorded.Error()
	if e.advice != "" {
		msg += ": " + e.advice
	}
	return msg
}
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
