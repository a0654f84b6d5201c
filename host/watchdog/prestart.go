package watchdog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"

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

	mu    sync.Mutex
	taken bool
}

// Prestart starts `exe worker` for the run that ref will name, with the
// owner marker of ref and the stamps of verified cache entries in its
// environment, and returns at once. The worker reads nothing of the run
// before Supervise hands it over: the record need not exist yet. Errors
// are those of starting the process; the caller then starts no worker
// early, and Supervise starts one as usual.
func Prestart(exe string, ref DirRef, verified map[string]plugin.FileStamp) (*Prestarted, error) {
	mine, theirs, err := handoffSocket()
	if err != nil {
		return nil, fmt.Errorf("starting the first worker: %w", err)
	}
	defer theirs.Close()
	args := ref.Args()
	cmd := workerCmd(exe, args, 0, OwnerMarker(string(ref)), []string{HandoffEnv + "=1"}, verified)
	out := &heldOutput{}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = theirs, out, out
	if err := startLocked(cmd); err != nil {
		mine.Close()
		return nil, fmt.Errorf("starting the first worker: %w", err)
	}
	return &Prestarted{args: args, cmd: cmd, sock: mine, out: out}, nil
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

// stop ends the waiting worker's process group and reaps it.
func (p *Prestarted) stop() {
	p.sock.Close()
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	_ = p.cmd.Wait()
}

// handOver sends the worker what a worker started now would get: env (the
// variables of the ownership hand-off, naming files from descriptor 3
// on, as for exec.Cmd.ExtraFiles) with the host variables of plan pl
// (handedEnv), as one JSON line, and files as SCM_RIGHTS on it. Its
// console goes to out from here on. It returns the worker's process and
// its stdin, whose closing tells the worker the watchdog is gone. On an
// error the worker is stopped, and the caller starts one as usual.
func (p *Prestarted) handOver(files []*os.File, env []string, pl *plan.Plan, out io.Writer) (*exec.Cmd, io.WriteCloser, error) {
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
