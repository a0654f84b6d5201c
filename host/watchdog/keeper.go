package watchdog

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"syscall"
	"time"

	"github.com/obversa/obversa/host/launch"
	"github.com/obversa/obversa/host/plan"
	"github.com/obversa/obversa/host/runstate"
	"github.com/obversa/obversa/internal/hostenv"
	"github.com/obversa/obversa/internal/proc"
	"github.com/obversa/obversa/plugin"
	"github.com/obversa/obversa/store"
)

// KeeperFDEnv tells a worker which inherited descriptor is its end of the
// keeper's pipe, to be kept from plugins and their commands.
const KeeperFDEnv = "OBVERSA_KEEPER_FD"

// The keeper outlives both supervisors of a run (docs/decisions.md,
// "Nothing of a run outlives both supervisors"): `obversa keeper`, started
// by the watchdog in a session of its own, reads a pipe whose write end
// only the watchdog and its workers hold. When both are gone — however
// they died — the pipe ends, and the keeper stops every process that
// carries the run's owner marker, with their descendants, and records
// what it stopped (run:cleanup) under the run's lock.
type keeper struct {
	w *os.File // the watchdog's end of the pipe
}

// startKeeper starts `exe keeper` for the run args name (Ref.Args) under
// plan p. The keeper gets the host's allowed variables only, no owner
// marker (it must not count as a process of the run) and no terminal (its
// own session): Ctrl-C and a hang-up reach the watchdog, not it. What
// else it needs from the host's environment (the known secrets its log
// redacts, libpq's variables) is the first line on its pipe (sendEnv).
func startKeeper(exe string, args []string, p *plan.Plan) (*keeper, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	cmd := exec.Command(exe, append([]string{"keeper"}, args...)...)
	cmd.Stdin = r
	cmd.Env = hostenv.Minimal(withoutOwner(os.Environ()))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		w.Close()
		return nil, fmt.Errorf("starting the run's keeper: %w", err)
	}
	// Reaped here when it ends before the watchdog, else adopted by init.
	go func() { _ = cmd.Wait() }()
	if err := sendEnv(w, p); err != nil {
		w.Close()
		return nil, fmt.Errorf("starting the run's keeper: %w", err)
	}
	return &keeper{w: w}, nil
}

// handOn adds the keeper's pipe to what a worker inherits: files become
// its descriptors from 3 on, env names the pipe's number.
func (k *keeper) handOn(files []*os.File, env []string) ([]*os.File, []string) {
	if k == nil {
		return files, env
	}
	return append(files, k.w), append(env, KeeperFDEnv+"="+strconv.Itoa(3+len(files)))
}

// releasedLine is what a watchdog writes on its keeper's pipe when it lets
// the run go with nothing of it left running (release).
const releasedLine = "released\n"

// release tells the keeper that the watchdog ends having stopped every
// process of the run and verified them gone (a run:cleanup with no
// survivors after its last worker): the keeper then ends without looking
// for processes or taking the run's lock, which the next `obversa
// resume` or `approve` may be taking at that moment (docs/decisions.md,
// "A watchdog that ends cleanly releases its keeper"). Called before
// close, while the watchdog still holds the run.
func (k *keeper) release() {
	if k != nil {
		_, _ = k.w.WriteString(releasedLine)
	}
}

// close lets go of the watchdog's end; the keeper acts once the workers'
// ends are gone too.
func (k *keeper) close() {
	if k != nil {
		k.w.Close()
	}
}

// holdKeeperPipe keeps the worker's end of the keeper's pipe from every
// process it starts: a plugin or command holding it would keep the keeper
// waiting after both supervisors died.
func holdKeeperPipe() {
	if fd, err := strconv.Atoi(os.Getenv(KeeperFDEnv)); err == nil && fd > 2 {
		syscall.CloseOnExec(fd)
	}
}

// Keep is the body of `obversa keeper`: it reads the environment line
// the watchdog sent first on done (the keeper's pipe), waits for the pipe
// to end, then stops every live process of the run ref names —
// those carrying its owner marker and their descendants — TERM, the run's
// teardown_grace, KILL, and records run:cleanup. It does nothing when the
// watchdog released it (it ended with its cleanup verified, the usual
// case: what carries the marker now belongs to the next watchdog), when
// no such process is left, or when another process holds the run (a
// watchdog that took it over answers for its processes). It returns the
// cleanup it recorded, nil if none.
func Keep(ctx context.Context, ref Ref, done io.Reader) (*runstate.CleanupData, error) {
	done, err := receiveEnv(done)
	if err != nil {
		return nil, err
	}
	// The marker is read before the wait: a database run's marker needs
	// its record, which may be out of reach once the run's host is cut off.
	marker, err := ref.Marker(ctx)
	if err != nil {
		return nil, err
	}
	rest, _ := io.ReadAll(done)
	if string(rest) == releasedLine {
		return nil, nil
	}
	// Freeze first, so that nothing of the run acts while the keeper
	// takes the run's lock.
	frozen := proc.FreezeTree(launch.OwnerEnv+"="+marker, map[int]bool{os.Getpid(): true})
	// A process that left its plugin's session and emptied its
	// environment carries no marker: its plugin's cgroup holds it.
	tag := launch.GroupTag(marker)
	if len(frozen) == 0 && len(plugin.TaggedGroupPIDs(tag)) == 0 {
		// Nothing of the run runs; the groups its launcher left empty
		// are removed all the same.
		plugin.StopTaggedGroups(tag)
		return nil, nil
	}
	run, st, err := openRunFold(ctx, ref)
	if err != nil {
		proc.Thaw(frozen)
		return nil, err
	}
	defer run.Close()
	log, err := openLog(run.Dir(), KeeperLog, st.Start().Plan, Policy(st.Start().Plan).KnownSecrets)
	if err != nil {
		proc.Thaw(frozen)
		return nil, err
	}
	defer log.Close()
	owner, err := lockSoon(ctx, run)
	if err != nil {
		proc.Thaw(frozen)
		fmt.Fprintf(log, "%s both supervisors are gone; the run is held by another process, which answers for its processes: %v\n", stamp(), err)
		return nil, nil
	}
	defer owner.Release()
	if err := st.CatchUp(ctx, run); err != nil {
		proc.Thaw(frozen)
		return nil, err
	}
	found, left := stopRun(ctx, marker, st.Start().Plan.TeardownGrace())
	// What was frozen and has ended meanwhile was stopped too (a frozen
	// process group that lost its parent gets SIGHUP from the kernel).
	found = union(frozen, found)
	fmt.Fprintf(log, "%s both supervisors are gone; stopped %d processes of the run, %d survived: %v\n", stamp(), len(found), len(left), found)
	data := runstate.NewCleanup(found, left)
	if err := appendFolded(ctx, run, st, store.NewEvent{Type: runstate.EventCleanup, Data: data}); err != nil {
		return nil, err
	}
	return &data, nil
}

// procsOf names pids as processes, with what is known of them.
func procsOf(pids []int) []proc.Proc {
	var out []proc.Proc
	for _, pid := range pids {
		out = append(out, proc.Proc{PID: pid})
	}
	return out
}

// union returns a followed by the processes of b not in a (by pid).
func union(a, b []proc.Proc) []proc.Proc {
	out := append([]proc.Proc(nil), a...)
	for _, p := range b {
		if !slices.ContainsFunc(out, func(q proc.Proc) bool { return q.PID == p.PID }) {
			out = append(out, p)
		}
	}
	return out
}

// lockWait bounds how long the keeper waits for the run's lock: the
// kernel releases a killed process's descriptors one by one, so the end
// of the keeper's pipe can come a moment before the lock is free.
const lockWait = 3 * time.Second

// lockSoon takes the run's ownership, retrying for up to lockWait while
// another process holds it.
func lockSoon(ctx context.Context, run store.Record) (store.Ownership, error) {
	deadline := time.Now().Add(lockWait)
	for {
		owner, err := run.Lock(ctx)
		if err == nil || !errors.Is(err, store.ErrProcessLocked) || time.Now().After(deadline) {
			return owner, err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func stamp() string { return time.Now().UTC().Format(time.RFC3339Nano) }
