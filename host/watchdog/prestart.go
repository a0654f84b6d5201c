package watchdog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/obversa/obversa/host/plan"
	"github.com/obversa/obversa/plugin"
	"github.com/obversa/obversa/store"
)

// HandoffEnv tells a worker that what its watchdog hands over at start —
// the environment line (sendEnv) and the descriptors a worker otherwise
// inherits (the run's lock, the keeper's pipe, the report pipe) — comes
// as one message on its stdin, a Unix socket, once the run is recorded
// (docs/decisions.md, "The first worker starts while the run is
// prepared").
const HandoffEnv = "OBVERSA_HANDOFF"

// Prestarted is the first worker of a run, started while the watchdog
// still creates the record (Prestart): a process that has done its
// program start and waits on its stdin for the hand-over, having read and
// written nothing of the run. Supervise hands it the run (its first worker
// takes it instead of starting one); Abandon stops it when the run is not
// supervised after all. A nil *Prestarted is none.
type Prestarted struct {
	args []string // the run's Ref.Args the worker was started with
	cmd  *exec.Cmd
	sock *os.File // the watchdog's end of the worker's stdin
	out  *heldOutput

	// early is the outcome of writing the early line (sendEarly), which
	// the hand-over must follow; sending says Send began writing it.
	early   chan error
	sending atomic.Bool

	mu    sync.Mutex
	taken bool
}

// Prestart starts `exe worker` for the run that ref will name, with the
// owner marker of ref in its environment, and returns at once: the
// worker's program start then overlaps the rest of the run's preparation
// and the creation of its record. Send gives it the plan the run is
// about to record, whose plugins it launches at once (docs/decisions.md,
// "The first worker launches its plugins before the hand-over"); it
// reads nothing of the run before Supervise hands it over: the record
// need not exist yet. Errors are those of starting the process; the
// caller then starts no worker early, and Supervise starts one as usual.
func Prestart(exe string, ref DirRef) (*Prestarted, error) {
	mine, theirs, err := handoffSocket()
	if err != nil {
		return nil, fmt.Errorf("starting the first worker: %w", err)
	}
	defer theirs.Close()
	args := ref.Args()
	cmd := workerCmd(exe, args, 0, OwnerMarker(string(ref)), []string{HandoffEnv + "=1"}, nil)
	out := &heldOutput{}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = theirs, out, out
	if err := startLocked(cmd); err != nil {
		mine.Close()
		return nil, fmt.Errorf("starting the first worker: %w", err)
	}
	return &Prestarted{args: args, cmd: cmd, sock: mine, out: out, early: make(chan error, 1)}, nil
}

// Send writes the worker the early line: plan p, which the run is about
// to record, the host variables its plugins need and the stamps of the
// cache entries the caller verified (sendEarly). It returns at once (a
// plan larger than the socket's buffer waits for the worker's program
// start); the hand-over follows the line. A nil p does nothing.
func (p *Prestarted) Send(pl *plan.Plan, verified map[string]plugin.FileStamp) {
	if p == nil {
		return
	}
	p.sending.Store(true)
	go func() { p.early <- sendEarly(p.sock, pl, verified) }()
}

// take returns p for the worker of restart number restart of the run
// args name, once: nil when p is nil, already taken, or was started for
// another run or restart (then it is stopped).
func (p *Prestarted) take(restart int, args []string) *Prestarted {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	taken := p.taken
	p.taken = true
	p.mu.Unlock()
	if taken {
		return nil
	}
	if restart != 0 || !slices.Equal(args, p.args) {
		p.stop()
		return nil
	}
	return p
}

// Abandon stops the worker if the run was not handed to it: the record
// could not be made, or the run was cancelled before it was. It does
// nothing once Supervise took the worker, and for a nil p.
func (p *Prestarted) Abandon() {
	if p == nil {
		return
	}
	p.mu.Lock()
	taken := p.taken
	p.taken = true
	p.mu.Unlock()
	if !taken {
		p.stop()
	}
}

// sent waits for the early line to be written and returns the error of
// writing it; one never sent (Send was not called) is an error.
func (p *Prestarted) sent() error {
	if !p.sending.Load() {
		return errors.New("the worker was never sent the run's plan")
	}
	return <-p.early
}

// abandonGrace bounds how long a worker that was not handed the run has
// to close the plugins it launched early once its stdin ends, before its
// process group is killed (its plugins then die with it: they have the
// parent-death signal).
const abandonGrace = 5 * time.Second

// stop ends the waiting worker: its stdin ends, which makes it close
// the plugins it launched and exit; after abandonGrace (at once when it
// was never sent a plan) its process group is killed. It reaps the
// worker.
func (p *Prestarted) stop() {
	p.sock.Close()
	if !p.sending.Load() {
		// Never sent a plan, it launched nothing: no need to wait.
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	}
	waited := make(chan struct{})
	go func() {
		_ = p.cmd.Wait()
		close(waited)
	}()
	t := time.NewTimer(abandonGrace)
	defer t.Stop()
	select {
	case <-waited:
	case <-t.C:
	}
	// The group may hold what the worker left; killing it is harmless
	// once the worker is gone.
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-waited
}

// handOver sends the worker what a worker started now would get: env (the
// variables of the ownership hand-off, naming files from descriptor 3
// on, as for exec.Cmd.ExtraFiles) with the host variables of plan pl
// (handedEnv), as one JSON line, and files as SCM_RIGHTS on it. Its
// console goes to out from here on. It returns the worker's process and
// its stdin, whose closing tells the worker the watchdog is gone. On an
// error the worker is stopped, and the caller starts one as usual.
func (p *Prestarted) handOver(files []*os.File, env []string, pl *plan.Plan, out io.Writer) (*exec.Cmd, io.WriteCloser, error) {
	if err := p.sent(); err != nil {
		p.stop()
		return nil, nil, fmt.Errorf("handing the run to the first worker: %w", err)
	}
	vars := handedEnv(pl)
	for _, kv := range env {
		name, v, _ := strings.Cut(kv, "=")
		vars[name] = v
	}
	line, err := json.Marshal(vars)
	if err == nil {
		err = sendWithFiles(p.sock, append(line, '\n'), files)
	}
	if err != nil {
		p.stop()
		return nil, nil, fmt.Errorf("handing the run to the first worker: %w", err)
	}
	p.out.attach(out)
	return p.cmd, p.sock, nil
}

// heldOutput is a first worker's console until the run is handed to it:
// what it writes before is kept (up to MaxWorkerOutput+1 bytes, enough
// for the console budget to see it was exceeded) and written to the
// worker's log when attach gives it one.
type heldOutput struct {
	mu   sync.Mutex
	held bytes.Buffer
	w    io.Writer
}

// Write implements io.Writer; it never fails.
func (h *heldOutput) Write(b []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.w != nil {
		return h.w.Write(b)
	}
	if room := MaxWorkerOutput + 1 - h.held.Len(); room > 0 {
		h.held.Write(b[:min(len(b), room)])
	}
	return len(b), nil
}

// attach writes what was held to w and sends every later write there.
func (h *heldOutput) attach(w io.Writer) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.held.Len() > 0 {
		_, _ = w.Write(h.held.Bytes())
		h.held.Reset()
	}
	h.w = w
}

// fdEnvs are the variables of a worker's environment that name an
// inherited descriptor.
var fdEnvs = []string{store.LockFDEnv, KeeperFDEnv, ReportFDEnv}

// placeFiles rewrites, in vars, each variable of fdEnvs from the number
// the descriptor would have had as exec.Cmd.ExtraFiles (3 on) to the
// descriptor received in its place (received, in the order sent). A
// number outside what was received is an error wrapping
// ErrNotFromWatchdog.
func placeFiles(vars map[string]string, received []int) error {
	for _, name := range fdEnvs {
		v, ok := vars[name]
		if !ok {
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 3 || n-3 >= len(received) {
			return fmt.Errorf("%w (%s=%q names no descriptor handed over with it)", ErrNotFromWatchdog, name, v)
		}
		vars[name] = strconv.Itoa(received[n-3])
	}
	return nil
}
