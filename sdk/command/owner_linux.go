package command

import (
	"context"
	"fmt"
	"os"
	"time"
)

// InspectOwnerMarked returns the live processes whose environment holds
// OBVERSA_RUN_OWNER=<owner>, ordered by pid. It scans /proc/*/environ, so it
// sees only processes whose environment this user may read. The calling
// process is never included.
//
// Errors: an empty owner or an unreadable /proc.
func InspectOwnerMarked(owner string) ([]Process, error) {
	m, err := ownerMarked(owner, false, protectedPIDs())
	if err != nil {
		return nil, err
	}
	out := make([]Process, 0, len(m))
	for _, s := range m {
		out = append(out, s.process())
	}
	sortProcesses(out)
	return out, nil
}

// StopOwnedTree stops every live process marked with owner and every
// descendant of one (a child that cleared its environment is still found
// by its parent): SIGTERM, up to grace (negative: none), SIGKILL, then up to
// KillVerifyTimeout for them to disappear. Each signal is addressed by
// (pid, start time), so a reused pid is never signalled. The calling process
// and its ancestors are never signalled. When ctx ends during the grace
// period, SIGKILL is sent at once.
//
// It returns the processes still alive at the end, with
// ErrTeardownIncomplete when there are any; an empty owner or an unreadable
// /proc is an error.
func StopOwnedTree(ctx context.Context, owner string, grace time.Duration) ([]Process, error) {
	prot := protectedPIDs()
	if _, err := ownerMarked(owner, true, prot); err != nil {
		return nil, err
	}
	// Processes keep their identity across scans so a marked parent that
	// exits first does not hide its children.
	known := map[int]uint64{}
	collect := func() map[int]procStat {
		m, err := ownerMarked(owner, true, prot)
		if err != nil {
			return nil
		}
		all, err := snapshot()
		if err != nil {
			return m
		}
		for pid, start := range known {
			if s, ok := all[pid]; ok && s.start == start && s.alive() && !prot[pid] {
				m[pid] = s
			}
		}
		for pid, s := range m {
			known[pid] = s.start
		}
		return m
	}
	remaining := teardown(ctx, collect, nil, grace)
	if len(remaining) > 0 {
		return remaining, fmt.Errorf("%w: %d process(es) marked %s still alive: %v",
			ErrTeardownIncomplete, len(remaining), owner, pidsOf(remaining))
	}
	return nil, nil
}

// ownerMarked scans /proc for live processes marked with owner, plus, with
// descendants, every live descendant of one. The caller and its ancestors
// are left out.
func ownerMarked(owner string, descendants bool, prot map[int]bool) (map[int]procStat, error) {
	if owner == "" {
		return nil, fmt.Errorf("command: empty owner marker")
	}
	all, err := snapshot()
	if err != nil {
		return nil, fmt.Errorf("command: scan /proc: %w", err)
	}
	kv := EnvRunOwner + "=" + owner
	out := map[int]procStat{}
	children := map[int][]int{}
	for pid, s := range all {
		children[s.ppid] = append(children[s.ppid], pid)
		if s.alive() && !prot[pid] && environHas(pid, kv) {
			out[pid] = s
		}
	}
	if descendants {
		queue := make([]int, 0, len(out))
		for pid := range out {
			queue = append(queue, pid)
		}
		for len(queue) > 0 {
			pid := queue[len(queue)-1]
			queue = queue[:len(queue)-1]
			for _, c := range children[pid] {
				if _, ok := out[c]; !ok && all[c].alive() && !prot[c] {
					out[c] = all[c]
					queue = append(queue, c)
				}
			}
		}
	}
	return out, nil
}

// protectedPIDs returns this process and its ancestors, which owner
// teardown never signals.
func protectedPIDs() map[int]bool {
	prot := map[int]bool{}
	for p := os.Getpid(); p > 0 && !prot[p]; {
		prot[p] = true
		s, err := readStat(p)
		if err != nil {
			break
		}
		p = s.ppid
	}
	return prot
}
