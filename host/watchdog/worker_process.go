package watchdog

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"github.com/obversa/obversa/host/executor"
	"github.com/obversa/obversa/plugin"
)

// MaxWorkerOutput is the worker console budget in bytes (docs/architecture.md#the-watchdog).
const MaxWorkerOutput = 1_000_000

// exit describes how a worker ended.
type exit struct {
	pid    int
	code   int
	signal string
	reason string // "", CodeStopped, CodeOperatorPause, CodeTimeout, CodeOutputLimit, reasonLost
	detail string
	// fault is what the worker reported stopped it (report.go), nil
	// for none or for a cause a restart mends (died).
	fault *executor.Fault
	// died is the cause the worker reported that a restart mends (a
	// plugin died under an attempt), nil for none.
	died *executor.Fault
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
	env, files := s.owner.Handoff()
	files, env = s.keeper.handOn(files, env)
	report, err := newReportPipe()
	if err != nil {
		return nil, err
	}
	files, env = report.handOn(files, env)
	cmd, stdin, err := s.startWorker(restart, files, env, out)
	if err != nil {
		report.close()
		return nil, err
	}
	defer stdin.Close()
	report.started()
	// Whatever ended the worker, what it reported is read once it is gone.
	defer func() { ex.fault, ex.died = sortReport(report.fault()) }()
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
		ex.reason, ex.detail = CodeStopped, StoppedByRequest
	case <-s.o.Pause:
		ex.reason, ex.detail = CodeOperatorPause, "paused by an operator (Ctrl-C, SIGTERM or obversa stop --pause)"
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

// sortReport sorts what a worker reported (f, nil for nothing): a cause
// that pauses the run (fault) or one a restart mends (died).
func sortReport(f *executor.Fault) (fault, died *executor.Fault) {
	if f != nil && f.Restarts() {
		return nil, f
	}
	return f, nil
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

// startWorker starts the worker of restart number restart, handing it
// files (its descriptors from 3 on) and env: it takes the worker started
// early (SuperviseOptions.Prestarted) when it is this one and hands the
// run over to it, else it starts `obversa worker` and writes the
// environment line to its stdin. It returns the worker and its stdin,
// which the caller closes.
func (s *supervisor) startWorker(restart int, files []*os.File, env []string, out io.Writer) (*exec.Cmd, io.WriteCloser, error) {
	if p := s.o.Prestarted.take(restart, s.ref.Args()); p != nil {
		cmd, stdin, err := p.handOver(files, env, s.plan, out)
		if err == nil {
			return cmd, stdin, nil
		}
		s.o.Logger.Warn("the worker started early could not take the run over; starting another", "error", err)
	}
	cmd := workerCmd(s.o.Exe, s.ref.Args(), restart, s.marker, env, s.o.Verified)
	cmd.ExtraFiles = files
	cmd.Stdout, cmd.Stderr = out, out
	// The worker watches its stdin: EOF means the watchdog is gone.
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, nil, err
	}
	if err := startLocked(cmd); err != nil {
		stdin.Close()
		return nil, nil, fmt.Errorf("starting worker: %w", err)
	}
	// A worker gone before reading it is seen when it is waited for.
	_ = sendEnv(stdin, s.plan)
	return cmd, stdin, nil
}

// workerCmd is `exe worker ARGS --restart N` in its own process group
// (workerSysProcAttr), with the owner marker's environment and env
// (workerEnv) and, when there are any, the stamps of the verified cache
// entries (VerifiedEnv): the worker Prestart and startWorker both start.
func workerCmd(exe string, args []string, restart int, marker string, env []string, verified map[string]plugin.FileStamp) *exec.Cmd {
	cmd := exec.Command(exe, append(append([]string{"worker"}, args...), "--restart", strconv.Itoa(restart))...)
	cmd.Env = workerEnv(marker, env)
	if len(verified) > 0 {
		cmd.Env = append(cmd.Env, VerifiedEnv+"="+encodeStamps(verified))
	}
	cmd.SysProcAttr = workerSysProcAttr()
	return cmd
}
