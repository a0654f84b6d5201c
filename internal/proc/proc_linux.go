package proc

import (
	"context"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// Stat reads the identity of a live process. A zombie counts as gone
// (os.ErrNotExist).
func Stat(pid int) (Proc, error) {
	i, err := Read(pid)
	if err != nil {
		return Proc{}, err
	}
	if !i.Alive() {
		return Proc{}, os.ErrNotExist
	}
	return i.Proc, nil
}

// Alive reports whether p still runs as the same process (same start time).
func Alive(p Proc) bool {
	cur, err := Stat(p.PID)
	return err == nil && cur.StartTime == p.StartTime
}

// Signal sends sig to p only if p is still the same process.
func Signal(p Proc, sig unix.Signal) error {
	if !Alive(p) {
		return nil
	}
	err := unix.Kill(p.PID, sig)
	if err == unix.ESRCH {
		return nil
	}
	return err
}

// Marked lists the live processes whose environment holds exactly the
// entry kv ("NAME=value"), leaving out the pids in exclude.
func Marked(kv string, exclude map[int]bool) ([]Proc, error) {
	pids, err := PIDs()
	if err != nil {
		return nil, err
	}
	var r reader
	var out []Proc
	for _, pid := range pids {
		if exclude[pid] || !r.environHas(pid, kv) {
			continue
		}
		if i, err := r.info(pid); err == nil && i.Alive() {
			out = append(out, i.Proc)
		}
	}
	return out, nil
}

// Stop sends SIGTERM to every process, waits up to grace for them to
// leave, sends SIGKILL to the rest, waits briefly again and returns the
// processes still alive (same start time). A pid whose start time changed
// is never signalled.
func Stop(ctx context.Context, procs []Proc, grace time.Duration) []Proc {
	// Every process gets its TERM before any is let go again, so a stopped
	// one acts on the TERM before anything else.
	for _, p := range procs {
		_ = Signal(p, unix.SIGTERM)
	}
	for _, p := range procs {
		_ = Signal(p, unix.SIGCONT)
	}
	left := waitGone(ctx, procs, grace)
	for _, p := range left {
		_ = Signal(p, unix.SIGKILL)
	}
	return waitGone(context.Background(), left, 2*time.Second)
}

func waitGone(ctx context.Context, procs []Proc, d time.Duration) []Proc {
	deadline := time.Now().Add(d)
	for {
		var left []Proc
		for _, p := range procs {
			if Alive(p) {
				left = append(left, p)
			}
		}
		if len(left) == 0 || time.Now().After(deadline) || ctx.Err() != nil {
			return left
		}
		time.Sleep(pollInterval)
		procs = left
	}
}

// SetChildSubreaper makes the calling process adopt orphaned descendants,
// so a grandchild that double-forks still reparents to it.
func SetChildSubreaper() error {
	return unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
}
