package command

import (
	"context"
	"os"
	"os/exec"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// useCgroup lets tests exercise the /proc-only path on machines where a
// cgroup v2 child group can be created.
var useCgroup = true

// pollInterval is how often teardown re-scans while waiting for processes
// to exit.
const pollInterval = 20 * time.Millisecond

// sendSignal is teardown's signal function; tests replace it to simulate
// processes that survive SIGKILL.
var sendSignal = signalProcess

// tracker follows the process tree of one command.
type tracker struct {
	marker    string // EnvCommandID=<id>
	self      int
	root      int
	rootStart uint64
	known     map[int]uint64 // pid → start time of every owned process seen
	cg        *cgroup
	pageSize  int64
	peak      int64
}

func newTracker(commandID string) *tracker {
	return &tracker{
		marker:   EnvCommandID + "=" + commandID,
		self:     os.Getpid(),
		known:    map[int]uint64{},
		pageSize: int64(os.Getpagesize()),
	}
}

// prepare sets the process attributes of cmd: its own process group and,
// when withCgroup and a group can be created, its own cgroup from the
// first instruction (CLONE_INTO_CGROUP).
func (t *tracker) prepare(cmd *exec.Cmd, commandID string, withCgroup bool) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if !withCgroup || !useCgroup {
		return
	}
	cg, err := newCgroup(commandID)
	if err != nil {
		return
	}
	t.cg = cg
	cmd.SysProcAttr.UseCgroupFD = true
	cmd.SysProcAttr.CgroupFD = cg.fd
}

// usesCgroup reports whether prepare put the command in a cgroup.
func (t *tracker) usesCgroup() bool { return t.cg != nil }

// startFailed releases what prepare created after a failed start.
func (t *tracker) startFailed() {
	t.release()
	t.cg = nil
}

// started records the started process; it is still our unreaped child, so
// its pid cannot have been reused yet.
func (t *tracker) started(pid int) {
	t.root = pid
	if s, err := readStat(pid); err == nil {
		t.rootStart = s.start
		t.known[pid] = s.start
	}
}

// collect returns the owned processes that are alive, keyed by pid, and
// remembers them. With withMarker it also scans every environment for the
// command's marker, which is slower.
func (t *tracker) collect(withMarker bool) map[int]procStat {
	all, err := snapshot()
	if err != nil {
		return nil
	}
	owned := map[int]procStat{}
	for pid, start := range t.known {
		if s, ok := all[pid]; ok && s.start == start {
			owned[pid] = s
		} else {
			delete(t.known, pid)
		}
	}
	// The pgid equals the root pid. While any process uses a pid as its
	// group id the kernel does not hand that pid out again, so a process
	// holding the root's pid with another start time proves the old group
	// is gone and the id now names someone else's group.
	groupOurs := true
	if s, ok := all[t.root]; ok && s.start != t.rootStart {
		groupOurs = false
	}
	children := map[int][]int{}
	for pid, s := range all {
		children[s.ppid] = append(children[s.ppid], pid)
		if groupOurs && t.root > 0 && s.pgid == t.root {
			owned[pid] = s
		}
	}
	if t.cg != nil {
		for _, pid := range t.cg.procs() {
			if s, ok := all[pid]; ok {
				owned[pid] = s
			}
		}
	}
	if withMarker {
		for pid, s := range all {
			if _, ok := owned[pid]; !ok && s.alive() && pid != t.self && environHas(pid, t.marker) {
				owned[pid] = s
			}
		}
	}
	// Descendants of owned processes are owned.
	queue := make([]int, 0, len(owned))
	for pid := range owned {
		queue = append(queue, pid)
	}
	for len(queue) > 0 {
		pid := queue[len(queue)-1]
		queue = queue[:len(queue)-1]
		for _, c := range children[pid] {
			if _, ok := owned[c]; !ok {
				owned[c] = all[c]
				queue = append(queue, c)
			}
		}
	}
	delete(owned, t.self)
	for pid, s := range owned {
		t.known[pid] = s.start
		if !s.alive() {
			delete(owned, pid)
		}
	}
	return owned
}

// sample updates the tree and returns its resident memory in bytes.
func (t *tracker) sample() int64 {
	var rss int64
	for _, s := range t.collect(false) {
		rss += s.rssPages * t.pageSize
	}
	if t.cg != nil {
		rss = max(rss, t.cg.memoryPeak())
	}
	t.peak = max(t.peak, rss)
	return rss
}

// peakBytes returns the highest sampled memory.
func (t *tracker) peakBytes() int64 { return t.peak }

// teardown stops every owned process and returns those still alive. On
// Linux it runs whether or not the started process exited, to stop what it
// left behind.
func (t *tracker) teardown(grace time.Duration, _ bool) []Process {
	var hard func()
	if t.cg != nil {
		hard = t.cg.kill
	}
	return teardown(context.Background(), func() map[int]procStat { return t.collect(true) }, hard, grace)
}

// release removes the cgroup, if any. A group that still holds a process
// teardown could not stop (or one still exiting) is removed in the
// background once it empties (removeLater), so it does not outlive its
// processes while this process lives.
func (t *tracker) release() {
	if t.cg != nil && t.cg.remove() != nil {
		go t.cg.removeLater()
	}
}

// teardown sends SIGTERM to every process collect returns, waits up to
// grace (cut short by ctx) re-scanning and signalling newcomers, then
// SIGKILLs what is left (hard, when set, kills a whole group first) and
// waits up to KillVerifyTimeout for the processes to disappear. It returns
// the survivors.
func teardown(ctx context.Context, collect func() map[int]procStat, hard func(), grace time.Duration) []Process {
	type key struct {
		pid   int
		start uint64
	}
	termed := map[key]bool{}
	term := func(alive map[int]procStat) {
		for _, s := range alive {
			k := key{s.pid, s.start}
			if !termed[k] {
				termed[k] = true
				_ = sendSignal(s.pid, s.start, unix.SIGTERM)
			}
		}
	}
	alive := collect()
	if len(alive) == 0 {
		return nil
	}
	if grace > 0 {
		term(alive)
		timer := time.NewTimer(grace)
		defer timer.Stop()
		tick := time.NewTicker(pollInterval)
		defer tick.Stop()
	wait:
		for {
			select {
			case <-ctx.Done():
				break wait
			case <-timer.C:
				break wait
			case <-tick.C:
				if alive = collect(); len(alive) == 0 {
					return nil
				}
				term(alive)
			}
		}
	}
	deadline := time.Now().Add(killVerify)
	for {
		if hard != nil {
			hard()
		}
		if alive = collect(); len(alive) == 0 {
			return nil
		}
		for _, s := range alive {
			_ = sendSignal(s.pid, s.start, unix.SIGKILL)
		}
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(pollInterval)
	}
	out := make([]Process, 0, len(alive))
	for _, s := range alive {
		out = append(out, s.process())
	}
	sortProcesses(out)
	return out
}

// exitDetails returns the name of the signal that ended the process ("" if
// it exited) and its maximum resident set size in bytes (ru_maxrss is in
// KiB on Linux).
func exitDetails(ps *os.ProcessState) (signal string, maxRSS int64) {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		signal = ws.Signal().String()
	}
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		maxRSS = ru.Maxrss * 1024
	}
	return signal, maxRSS
}
