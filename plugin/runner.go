package plugin

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/sys/unix"
)

const (
	// maxHandshakeBytes bounds the first line a plugin writes to stdout,
	// its handshake. go-plugin's own reader gives up at 64 KiB; the host
	// reads the line itself so that a longer one is reported by its size.
	maxHandshakeBytes = 64 << 10
	// stderrTailBytes is how much of a plugin's latest stderr a start
	// failure quotes.
	stderrTailBytes = 4 << 10
	// pipeDrain is how long the output pipes are still read after the
	// plugin exited: a child of the plugin may hold them open, and must not
	// keep a close waiting.
	pipeDrain = 200 * time.Millisecond
	// pipeDrainMax bounds the wait for a reader that is slow to take the
	// bytes left in a pipe (a busy machine): what the plugin wrote before
	// it exited is not dropped before then.
	pipeDrainMax = 10 * time.Second
)

// procRunner runs a plugin process for go-plugin (its runner.Runner). It
// owns the process's stdout and stderr: the first stdout line is handed to
// go-plugin as the handshake; every later stdout line goes to the plugin
// log as a warning (cut when too long, never dropped); stderr passes to go-plugin's log
// forwarding while its last 4 KiB are kept for error messages. Once the
// process has exited, the pipes are read for pipeDrain more and then
// closed, so that nothing a plugin leaves behind can stall Close.
type procRunner struct {
	newCmd func() (*exec.Cmd, error)
	cmd    *exec.Cmd
	logger hclog.Logger

	outR, errR *os.File
	handshake  *io.PipeReader
	stderr     *tailReader

	exited   chan struct{} // closed once the process was reaped
	state    *os.ProcessState
	waitErr  error
	killedMu sync.Mutex
	killed   bool // the host killed it before it exited by itself

	// longLine is the size of a first stdout line longer than
	// maxHandshakeBytes (0 when none).
	longLine int64
	// foreign says the host refused to dial the address of the handshake
	// line, foreignAddr (foreignAddress); the line is then not handed to
	// go-plugin.
	foreign     bool
	foreignAddr string
	lineDone    chan struct{} // closed once the first line was handled
}

func newProcRunner(newCmd func() (*exec.Cmd, error), logger hclog.Logger, redact func(string) string) (*procRunner, error) {
	cmd, err := newCmd()
	if err != nil {
		return nil, err
	}
	return &procRunner{
		newCmd:   newCmd,
		cmd:      cmd,
		logger:   logger,
		stderr:   &tailReader{tail: newTail(stderrTailBytes), redact: redact, eof: make(chan struct{})},
		exited:   make(chan struct{}),
		lineDone: make(chan struct{}),
	}, nil
}

// Start starts the process with its stdout and stderr on pipes this runner
// reads.
func (r *procRunner) Start(context.Context) error {
	outR, outW, err := os.Pipe()
	if err != nil {
		return err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return err
	}
	r.logger.Debug("starting plugin", r.describe()...)
	err = r.start(outW, errW)
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		return err
	}
	r.logger.Debug("plugin started", "path", r.cmd.Args[0], "pid", r.cmd.Process.Pid)
	r.outR, r.errR = outR, errR
	r.stderr.f = errR
	hsR, hsW := io.Pipe()
	r.handshake = hsR
	pumped := make(chan struct{})
	go func() {
		defer close(pumped)
		r.pumpStdout(hsW)
	}()
	go r.wait(pumped)
	return nil
}

// describe returns the log fields of the command: the plugin binary's
// path and arguments, and, for a confined plugin, the shim that executes
// it (the running binary, plugin/confine).
func (r *procRunner) describe() []any {
	kv := []any{"path", r.cmd.Args[0], "args", r.cmd.Args}
	if r.cmd.Path != r.cmd.Args[0] {
		kv = append(kv, "shim", r.cmd.Path)
	}
	return kv
}

// textBusyRetries bounds the retries of an exec that failed with ETXTBSY:
// a copy written by this process moments ago can still be open for
// writing in a child another goroutine forked meanwhile, until that child
// execs (golang.org/issue/22315).
const textBusyRetries = 20

// start starts the command with stdout and stderr on the given pipes,
// retrying an exec refused with ETXTBSY on a fresh command. The extra
// files handed to the child (a confined plugin's rules) are closed here
// once it started.
func (r *procRunner) start(stdout, stderr *os.File) error {
	for i := 0; ; i++ {
		r.cmd.Stdout, r.cmd.Stderr = stdout, stderr
		err := startCmd(r.cmd)
		for _, f := range r.cmd.ExtraFiles {
			_ = f.Close()
		}
		if !errors.Is(err, syscall.ETXTBSY) || i == textBusyRetries {
			return err
		}
		time.Sleep(time.Duration(i+1) * time.Millisecond)
		if r.cmd, err = r.newCmd(); err != nil {
			return err
		}
	}
}

// wait reaps the process, then lets the pipes' readers reach their end
// before closing the pipes (drain).
func (r *procRunner) wait(pumped <-chan struct{}) {
	r.waitErr = r.cmd.Wait()
	r.state = r.cmd.ProcessState
	close(r.exited)
	now := time.Now()
	soft, hard := now.Add(pipeDrain), now.Add(pipeDrainMax)
	for _, p := range []struct {
		name string
		f    *os.File
		done <-chan struct{}
	}{{"stdout", r.outR, pumped}, {"stderr", r.errR, r.stderr.eof}} {
		if left := drain(p.f, p.done, soft, hard); left > 0 {
			// A process the plugin left behind keeps the pipe full: say
			// what is dropped rather than drop it silently.
			r.logger.Warn("plugin output cut: a process holding the pipe kept it full past the drain bound",
				"stream", p.name, "unread_bytes", left, "bound", pipeDrainMax)
		}
	}
	r.outR.Close()
	r.errR.Close()
}

// stderrEnd waits up to d for the stderr reader to reach the end of the
// pipe, so that the kept tail holds all the process wrote (wait closes
// the pipe within pipeDrainMax of the exit at the latest).
func (r *procRunner) stderrEnd(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-r.stderr.eof:
	case <-t.C:
	}
}

// pumpStdout hands the first line to go-plugin through hs and logs the
// rest.
func (r *procRunner) pumpStdout(hs *io.PipeWriter) {
	br := bufio.NewReaderSize(&closedAsEOF{r.outR}, maxHandshakeBytes)
	line, err := br.ReadSlice('\n')
	switch {
	case errors.Is(err, bufio.ErrBufferFull):
		n := int64(len(line))
		for errors.Is(err, bufio.ErrBufferFull) {
			line, err = br.ReadSlice('\n')
			n += int64(len(line))
		}
		if err == nil {
			n-- // the newline
		}
		r.longLine = n
		close(r.lineDone)
		hs.Close()
	default:
		r.foreignAddr, r.foreign = foreignAddress(line)
		close(r.lineDone)
		if !r.foreign {
			_, _ = hs.Write(line)
		}
		hs.Close()
	}
	if err != nil {
		return
	}
	out := newStrayStdoutLogger(r.logger)
	_, _ = io.Copy(out, br)
	out.Flush()
}

// Wait waits for the process to end and returns cmd.Wait's error.
func (r *procRunner) Wait(context.Context) error {
	<-r.exited
	return r.waitErr
}

// Kill SIGKILLs the process and its process group. It may be called more
// than once.
func (r *procRunner) Kill(context.Context) error {
	if r.cmd.Process == nil {
		return nil
	}
	select {
	case <-r.exited:
		return nil
	default:
	}
	// A process already on its way out ended by itself: its own exit
	// status is what the error reports.
	if !exiting(r.cmd.Process.Pid) {
		r.killedMu.Lock()
		r.killed = true
		r.killedMu.Unlock()
	}
	killGroup(r.cmd)
	_ = r.cmd.Process.Kill()
	return nil
}

// Stdout is the handshake line only: go-plugin reads it, then EOF.
func (r *procRunner) Stdout() io.ReadCloser { return r.handshake }

// Stderr is the plugin's stderr, for go-plugin's log forwarding.
func (r *procRunner) Stderr() io.ReadCloser { return r.stderr }

// Name is the path of the executed binary.
func (r *procRunner) Name() string { return r.cmd.Path }

// ID is the pid, empty before Start.
func (r *procRunner) ID() string {
	if r.cmd.Process == nil {
		return ""
	}
	return strconv.Itoa(r.cmd.Process.Pid)
}

// Diagnose adds nothing: the start error says what happened.
func (r *procRunner) Diagnose(context.Context) string { return "" }

// PluginToHost keeps addresses as they are: the plugin runs on this host.
func (r *procRunner) PluginToHost(network, addr string) (string, string, error) {
	return network, addr, nil
}

// HostToPlugin keeps addresses as they are.
func (r *procRunner) HostToPlugin(network, addr string) (string, string, error) {
	return network, addr, nil
}

// exitWithin waits up to d for the process to end and describes how it
// ended: "exit code N", "killed by signal S", or "" when it still ran or
// the host killed it.
func (r *procRunner) exitWithin(d time.Duration) string {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-r.exited:
	case <-t.C:
		return ""
	}
	ws, ok := r.state.Sys().(syscall.WaitStatus)
	if !ok {
		return r.state.String()
	}
	r.killedMu.Lock()
	killed := r.killed
	r.killedMu.Unlock()
	switch {
	case ws.Exited():
		return fmt.Sprintf("exit code %d", ws.ExitStatus())
	case ws.Signaled() && killed && ws.Signal() == syscall.SIGKILL:
		return ""
	case ws.Signaled():
		return "killed by signal " + unix.SignalName(ws.Signal())
	}
	return r.state.String()
}

// closedAsEOF reads a file that the runner may close under the reader; the
// close reads as the end of the stream.
type closedAsEOF struct{ f *os.File }

// Read implements io.Reader.
func (c *closedAsEOF) Read(p []byte) (int, error) {
	n, err := c.f.Read(p)
	if errors.Is(err, os.ErrClosed) {
		err = io.EOF
	}
	return n, err
}

// tailReader reads the plugin's stderr and keeps its last bytes.
type tailReader struct {
	f       *os.File
	tail    *tail
	redact  func(string) string
	eof     chan struct{} // closed at the first error (the end)
	eofOnce sync.Once
}

// Read implements io.Reader.
func (t *tailReader) Read(p []byte) (int, error) {
	n, err := (&closedAsEOF{t.f}).Read(p)
	t.tail.Write(p[:n])
	if err != nil {
		t.eofOnce.Do(func() { close(t.eof) })
	}
	return n, err
}

// Close is a no-op: the runner closes the pipe once the process is gone.
func (t *tailReader) Close() error { return nil }

// String returns the kept bytes, redacted.
func (t *tailReader) String() string {
	s := string(bytes.ToValidUTF8(t.tail.Bytes(), []byte("\uFFFD")))
	if t.redact != nil {
		s = t.redact(s)
	}
	return s
}

// tail keeps the last n bytes written to it.
type tail struct {
	mu  sync.Mutex
	buf []byte
	n   int
}

func newTail(n int) *tail { return &tail{n: n} }

// Write keeps the last bytes of p.
func (t *tail) Write(p []byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(p) >= t.n {
		t.buf = append(t.buf[:0], p[len(p)-t.n:]...)
		return
	}
	if over := len(t.buf) + len(p) - t.n; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	t.buf = append(t.buf, p...)
}

// Bytes returns the kept bytes.
func (t *tail) Bytes() []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]byte(nil), t.buf...)
}
