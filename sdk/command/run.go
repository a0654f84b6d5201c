package command

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"time"
)

// killVerify is KillVerifyTimeout; tests shorten it.
var killVerify = KillVerifyTimeout

// Run starts req.Argv, waits for it and returns what it did. The command
// and every process it starts are stopped before Run returns (see the
// package documentation): when the started process exits by itself, any
// descendant still running is torn down too.
//
// Run returns (nil, ErrSpawnFailed) when the command cannot be started. Once
// it started, Result is always non-nil: a non-zero exit is reported in
// Result.ExitCode, a timeout in Result.TimedOut (req.Timeout or ctx's
// deadline), a cancellation in Result.Aborted, all with a nil error. The
// error is non-nil when the output cap (ErrOutputLimit) or memory cap
// (ErrMemoryLimit) stopped the command, or when teardown left survivors
// (ErrTeardownIncomplete, joined with the cause if any).
func Run(ctx context.Context, req Request) (*Result, error) {
	if len(req.Argv) == 0 || req.Argv[0] == "" {
		return nil, fmt.Errorf("%w: empty argv", ErrSpawnFailed)
	}
	grace := req.TeardownGrace
	if grace == 0 {
		grace = DefaultTeardownGrace
	}
	if err := ctx.Err(); err != nil {
		// Never start a command for a call that is already over.
		res := &Result{ExitCode: -1}
		markStopped(res, ctx)
		return res, nil
	}
	commandID := newCommandID()
	p, tr, err := start(req, commandID)
	if err != nil {
		return nil, err
	}
	defer tr.release()

	r := begin(p, tr, req)
	res := &Result{ExitCode: -1}
	exited, cause := r.wait(ctx, req, res)
	remaining, exited := r.stop(grace, exited)
	return res, r.collect(res, exited, remaining, cause)
}

// running is a started command whose output is being read and whose exit
// is being waited for.
type running struct {
	p              *process
	tr             *tracker
	stdout, stderr *capture
	// over receives a capture that exceeded its limit.
	over chan *capture
	// readers receives once per capture whose reading ended.
	readers chan struct{}
	// waited receives the started process's exit.
	waited chan error
	// holders are the processes that still held an output pipe when
	// finishOutput stopped waiting for its end.
	holders []Process
}

// begin reads the command's output, feeds it req.Stdin and waits for its
// exit, each in a goroutine of its own.
func begin(p *process, tr *tracker, req Request) *running {
	r := &running{
		p:       p,
		tr:      tr,
		stdout:  &capture{limit: req.MaxOutputBytes, name: "stdout", tee: req.StdoutTee},
		stderr:  &capture{limit: req.MaxOutputBytes, name: "stderr"},
		over:    make(chan *capture, 2),
		readers: make(chan struct{}, 2),
		waited:  make(chan error, 1),
	}
	go r.stdout.read(p.stdoutR, r.over, r.readers)
	go r.stderr.read(p.stderrR, r.over, r.readers)
	if p.stdinW != nil {
		go func() {
			_, _ = p.stdinW.Write(req.Stdin) // EPIPE when the command ignores stdin
			_ = p.stdinW.Close()
		}()
	}
	go func() { r.waited <- p.cmd.Wait() }()
	return r
}

// wait returns when the command exits, ctx ends, req.Timeout passes or a
// limit is exceeded, sampling the tree's memory every SampleInterval.
// exited says the started process exited by itself; cause is the exceeded
// limit, if any. Timeouts and cancellations are marked in res.
func (r *running) wait(ctx context.Context, req Request, res *Result) (exited bool, cause error) {
	var timeout <-chan time.Time
	if req.Timeout > 0 {
		timer := time.NewTimer(req.Timeout)
		defer timer.Stop()
		timeout = timer.C
	}
	ticker := time.NewTicker(SampleInterval)
	defer ticker.Stop()
	for {
		select {
		case <-r.waited:
			return true, nil
		case <-ctx.Done():
			markStopped(res, ctx)
			return false, nil
		case <-timeout:
			res.TimedOut = true
			return false, nil
		case c := <-r.over:
			return false, fmt.Errorf("%w: %s exceeded %d bytes", ErrOutputLimit, c.name, c.limit)
		case <-ticker.C:
			if rss := r.tr.sample(); req.MaxMemoryBytes > 0 && rss > req.MaxMemoryBytes {
				return false, fmt.Errorf("%w: process tree used %d bytes, limit %d", ErrMemoryLimit, rss, req.MaxMemoryBytes)
			}
		}
	}
}

// stop tears the command's tree down, waits for the started process once
// it was killed and only then finishes reading its output (finishOutput):
// with every writer gone the pipes end, so nothing written is dropped. It returns the processes
// teardown could not stop and whether the started process has exited.
func (r *running) stop(grace time.Duration, exited bool) (remaining []Process, _ bool) {
	remaining = r.tr.teardown(grace, exited)
	if !exited {
		// After SIGKILL the started process exits; only an uninterruptible
		// sleep can delay it, and then it is reported as remaining.
		select {
		case <-r.waited:
			exited = true
		case <-time.After(killVerify):
		}
	}
	if r.p.stdinW != nil {
		_ = r.p.stdinW.Close()
	}
	r.finishOutput()
	return remaining, exited
}

// collect fills res with the output, memory and exit of the stopped
// command and returns cause joined with what else went wrong: an output
// overflow in the instant of exit, survivors of teardown, a cut output.
func (r *running) collect(res *Result, exited bool, remaining []Process, cause error) error {
	res.Stdout, res.Stderr = r.stdout.bytes(), r.stderr.bytes()
	res.PeakMemoryBytes = r.tr.peakBytes()
	if state := r.p.cmd.ProcessState; exited && state != nil {
		var maxRSS int64
		res.ExitCode = state.ExitCode()
		res.Signal, maxRSS = exitDetails(state)
		res.PeakMemoryBytes = max(res.PeakMemoryBytes, maxRSS)
	}
	if cause == nil && (r.stdout.overflowed || r.stderr.overflowed) {
		// The command exited in the same instant it overflowed.
		c := r.stdout
		if !c.overflowed {
			c = r.stderr
		}
		cause = fmt.Errorf("%w: %s exceeded %d bytes", ErrOutputLimit, c.name, c.limit)
	}
	if len(remaining) > 0 {
		res.RemainingProcesses = remaining
		tdErr := fmt.Errorf("%w: %d process(es) still alive: %v", ErrTeardownIncomplete, len(remaining), pidsOf(remaining))
		cause = errors.Join(cause, tdErr)
	}
	if cut := r.cutReason(); cut != "" {
		res.OutputCut = cut
		cause = errors.Join(cause, fmt.Errorf("%w: %s", ErrOutputCut, cut))
	}
	return cause
}

// markStopped records why ctx ended.
func markStopped(res *Result, ctx context.Context) {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		res.TimedOut = true
	} else {
		res.Aborted = true
	}
}

// process is a started command with the parent's ends of its pipes.
type process struct {
	cmd              *exec.Cmd
	stdoutR, stderrR *os.File
	stdinW           *os.File
}

// start builds and starts the command, retrying once outside a cgroup if
// starting inside one failed (old kernels lack CLONE_INTO_CGROUP).
func start(req Request, commandID string) (*process, *tracker, error) {
	p, tr, err := startOnce(req, commandID, true)
	if err != nil && tr != nil && tr.usesCgroup() {
		tr.startFailed()
		p, tr, err = startOnce(req, commandID, false)
	}
	if err != nil {
		if tr != nil {
			tr.startFailed()
		}
		return nil, nil, err
	}
	return p, tr, nil
}

func startOnce(req Request, commandID string, withCgroup bool) (*process, *tracker, error) {
	cmd := exec.Command(req.Argv[0], req.Argv[1:]...)
	if cmd.Err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrSpawnFailed, cmd.Err)
	}
	cmd.Dir = req.Dir
	cmd.Env = buildEnv(req, commandID)
	var closers []*os.File
	closeAll := func() {
		for _, f := range closers {
			_ = f.Close()
		}
	}
	pipe := func() (r, w *os.File, err error) {
		r, w, err = os.Pipe()
		if err == nil {
			closers = append(closers, r, w)
		}
		return r, w, err
	}
	p := &process{cmd: cmd}
	var stdoutW, stderrW, stdinR *os.File
	var err error
	if p.stdoutR, stdoutW, err = pipe(); err != nil {
		closeAll()
		return nil, nil, fmt.Errorf("%w: stdout pipe: %w", ErrSpawnFailed, err)
	}
	if p.stderrR, stderrW, err = pipe(); err != nil {
		closeAll()
		return nil, nil, fmt.Errorf("%w: stderr pipe: %w", ErrSpawnFailed, err)
	}
	if req.Stdin != nil {
		if stdinR, p.stdinW, err = pipe(); err != nil {
			closeAll()
			return nil, nil, fmt.Errorf("%w: stdin pipe: %w", ErrSpawnFailed, err)
		}
		cmd.Stdin = stdinR
	}
	// *os.File streams are handed to the child as they are, so exec starts
	// no copying goroutines and Wait returns when the child exits, even if
	// a detached grandchild keeps the pipes open.
	cmd.Stdout, cmd.Stderr = stdoutW, stderrW
	tr := newTracker(commandID)
	tr.prepare(cmd, commandID, withCgroup)
	if err := cmd.Start(); err != nil {
		closeAll()
		return nil, tr, fmt.Errorf("%w: %w", ErrSpawnFailed, err)
	}
	_ = stdoutW.Close()
	_ = stderrW.Close()
	if stdinR != nil {
		_ = stdinR.Close()
	}
	tr.started(cmd.Process.Pid)
	return p, tr, nil
}

// sortProcesses orders processes by pid.
func sortProcesses(ps []Process) {
	slices.SortFunc(ps, func(a, b Process) int { return a.PID - b.PID })
}

func pidsOf(ps []Process) []int {
	out := make([]int, len(ps))
	for i, p := range ps {
		out[i] = p.PID
	}
	return out
}
