package proc

import (
	"context"
	"time"

	"golang.org/x/sys/unix"
)

// MarkedTree lists the live processes whose environment holds exactly the
// entry kv, and every live descendant of one (a child that cleared its
// environment is still found through its parent), leaving out the pids in
// exclude and their descendants. Order is unspecified.
func MarkedTree(kv string, exclude map[int]bool) ([]Proc, error) {
	pids, err := PIDs()
	if err != nil {
		return nil, err
	}
	// Environments first: when nothing carries the marker (the usual
	// case, after a worker that cleaned up after itself) no stat file is
	// read at all.
	var r reader
	marked := map[int]bool{}
	for _, pid := range pids {
		if !exclude[pid] && r.environHas(pid, kv) {
			marked[pid] = true
		}
	}
	if len(marked) == 0 {
		return nil, nil
	}
	children := map[int][]Info{}
	var queue []Info
	for _, pid := range pids {
		i, err := r.info(pid)
		if err != nil || !i.Alive() || exclude[pid] {
			continue
		}
		children[i.PPID] = append(children[i.PPID], i)
		if marked[pid] {
			queue = append(queue, i)
		}
	}
	seen := map[int]bool{}
	var out []Proc
	for len(queue) > 0 {
		i := queue[len(queue)-1]
		queue = queue[:len(queue)-1]
		if seen[i.PID] {
			continue
		}
		seen[i.PID] = true
		out = append(out, i.Proc)
		queue = append(queue, children[i.PID]...)
	}
	return out, nil
}

// FreezeTree freezes with SIGSTOP the processes MarkedTree(kv, exclude)
// finds, scanning again until no new one appears (a process forked
// meanwhile is frozen too), and returns them. Frozen, none can act on
// another's end — a shell whose child is killed first would otherwise run
// its next command. Thaw or Stop lets them go.
func FreezeTree(kv string, exclude map[int]bool) []Proc {
	seen := map[Proc]bool{}
	var found []Proc
	for range 5 {
		ps, err := MarkedTree(kv, exclude)
		if err != nil {
			break
		}
		fresh := 0
		for _, p := range ps {
			if !seen[p] {
				seen[p] = true
				found = append(found, p)
				_ = Signal(p, unix.SIGSTOP)
				fresh++
			}
		}
		if fresh == 0 {
			break
		}
	}
	return found
}

// Thaw sends SIGCONT to each process that is still the same process.
func Thaw(procs []Proc) {
	for _, p := range procs {
		_ = Signal(p, unix.SIGCONT)
	}
}

// StopTree freezes the processes MarkedTree(kv, exclude) finds
// (FreezeTree) and stops them all with Stop. It returns the processes it
// found and those that survived.
func StopTree(ctx context.Context, kv string, exclude map[int]bool, grace time.Duration) (found, left []Proc) {
	found = FreezeTree(kv, exclude)
	if len(found) == 0 {
		return nil, nil
	}
	return found, Stop(ctx, found, grace)
}
