package command

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"time"
)

// drainTimeout bounds how long Run keeps reading output after the command
// and its tree are gone; only a process that escaped tracking can still
// hold the pipes then.
const drainTimeout = 250 * time.Millisecond

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

	stdout := &capture{limit: req.MaxOutputBytes, name: "stdout", tee: req.StdoutTee}
	stderr := &capture{limit: req.MaxOutputBytes, name: "stderr"}
	over := make(chan *capture, 2)
	readers := make(chan struct{}, 2)
	go stdout.read(p.stdoutR, over, readers)
	go stderr.read(p.stderrR, over, readers)
	if p.stdinW != nil {
		go func() {
			_, _ = p.stdinW.Write(req.Stdin) // EPIPE when the command ignores stdin
			_ = p.stdinW.Close()
		}()
	}
	waited := make(chan error, 1)
	go func() { waited <- p.cmd.Wait() }()

	var timeout <-chan time.Time
	if req.Timeout > 0 {
		timer := time.NewTimer(req.Timeout)
		defer timer.Stop()
		timeout = timer.C
	}
	ticker := time.NewTicker(SampleInterval)
	defer ticker.Stop()

	res := &Result{ExitCode: -1}
	var cause error
	exited := false
loop:
	for {
		select {
		case <-waited:
			exited = true
			break loop
		case <-ctx.Done():
			markStopped(res, ctx)
			break loop
		case <-timeout:
			res.TimedOut = true
			break loop
		case c := <-over:
			cause = fmt.Errorf("%w: %s exceeded %d bytes", ErrOutputLimit, c.name, c.limit)
			break loop
		case <-ticker.C:
			if rss := tr.sample(); req.MaxMemoryBytes > 0 && rss > req.MaxMemoryBytes {
				cause = fmt.Errorf("%w: process tree used %d bytes, limit %d", ErrMemoryLimit, rss, req.MaxMemoryBytes)
				break loop
			}
		}
	}

	remaining := tr.teardown(grace, exited)
	if !exited {
		// After SIGKILL the started process exits; only an uninterruptible
		// sleep can delay it, and then it is reported as remaining.
		select {
		case <-waited:
			exited = true
		case <-time.After(killVerify):
		}
	}
	if p.stdinW != nil {
		_ = p.stdinW.Close()
	}
	drain := time.NewTimer(drainTimeout)
	for n := 0; n < 2; {
		select {
		case <-readers:
			n++
		case <-drain.C:
			// A process outside our view still holds a pipe: stop reading.
			_ = p.stdoutR.Close()
			_ = p.stderrR.Close()
		}
	}
	drain.Stop()
	_ = p.stdoutR.Close()
	_ = p.stderrR.Close()

	res.Stdout, res.Stderr = stdout.bytes(), stderr.bytes()
	res.PeakMemoryBytes = tr.peakBytes()
	if exited && p.cmd.ProcessState != nil {
		var maxRSS int64
		res.ExitCode = p.cmd.ProcessState.ExitCode()
		res.Signal, maxRSS = exitDetails(p.cmd.ProcessState)
		res.PeakMemoryBytes = max(res.PeakMemoryBytes, maxRSS)
	}
	if cause == nil && (stdout.overflowed || stderr.overflowed) {
		// The command exited in the same instant it overflowed.
		c := stdout
		if !c.overflowed {
			c = stderr
		}
		cause = fmt.Errorf("%w: %s exceeded %d bytes", ErrOutputLimit, c.name, c.limit)
	}
	if len(remaining) > 0 {
		res.RemainingProcesses = remaining
		tdErr := fmt.Errorf("%w: %d process(es) still alive: %v", ErrTeardownIncomplete, len(remaining), pidsOf(remaining))
		cause = errors.Join(cause, tdErr)
	}
	return res, cause
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

// capture collects one output stream up to limit bytes.
type capture struct {
	name       string
	limit      int64 // 0: unlimited
	buf        bytes.Buffer
	overflowed bool
	tee        io.Writer // optional copy of what is kept
}

// read copies r into the buffer until EOF or a read error (the pipe closed
// by Run), reports the first overflow on over, keeps draining so the
// writer never blocks on a full pipe, and signals done.
func (c *capture) read(r io.Reader, over chan<- *capture, done chan<- struct{}) {
	defer func() { done <- struct{}{} }()
	chunk := make([]byte, 32*1024)
	for {
		n, err := r.Read(chunk)
		if n > 0 {
			data := chunk[:n]
			if c.limit > 0 {
				room := c.limit - int64(c.buf.Len())
				if int64(len(data)) > room {
					data = data[:max(room, 0)]
					if !c.overflowed {
						c.overflowed = true
						over <- c
					}
				}
			}
			c.buf.Write(data)
			if c.tee != nil && len(data) > 0 {
				_, _ = c.tee.Write(data)
			}
		}
		if err != nil {
			return
		}
	}
}

// bytes returns the captured output; nil when nothing was written. Only
// valid after read returned.
func (c *capture) bytes() []byte {
	if c.buf.Len() == 0 {
		return nil
	}
	return c.buf.Bytes()
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
