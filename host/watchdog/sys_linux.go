package watchdog

import (
	"os"
	"os/exec"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/obversa/obversa/internal/proc"
	"github.com/obversa/obversa/plugin"
)

// workerSysProcAttr puts the worker in its own process group and asks the
// kernel to send it SIGTERM when the watchdog dies.
func workerSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}

// WorkerTimerSlack is the timer slack, in ns, a worker starts with
// (prctl(2) PR_SET_TIMERSLACK; every thread of the worker and the
// processes it starts inherit it): how much later than asked the kernel
// may end the worker's timed sleeps. It is the Go runtime's monitor
// thread (sysmon) that sleeps most: 20 µs at a time whenever a thread is
// in a system call, which at the default 50 µs slack woke it about six
// times per chain node. At 0.5 ms it wakes about once, while the worker
// loses nothing it waits for — events and I/O end a sleep at once, only
// timeouts are later (docs/decisions.md, "The worker's timer slack").
const WorkerTimerSlack = 500_000

// startLocked starts cmd from a locked OS thread
// (proc.StartWithTimerSlack): the parent-death signal follows the thread
// that forked, and Go never retires it while the process lives. The
// thread forks with WorkerTimerSlack, which the child inherits, and gets
// its own slack back after; the child learns that slack from
// plugin.TimerSlackEnv and starts its plugins with it, so a plugin and the
// commands it runs keep the timing the host had. (Should the slack not be
// settable, the child is told the slack it has anyway.)
func startLocked(cmd *exec.Cmd) error {
	return proc.StartWithTimerSlack(cmd, func(own int) int {
		if own <= 0 || own >= WorkerTimerSlack {
			return own // a larger slack the watchdog was given is kept
		}
		if cmd.Env != nil {
			cmd.Env = append(cmd.Env, plugin.TimerSlackEnv+"="+strconv.Itoa(own))
		}
		return WorkerTimerSlack
	})
}

// reapOrphans collects exited processes reparented to the watchdog (it is a
// child subreaper) so they do not linger as zombies.
func reapOrphans() {
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
	}
}

// allocate gives f n bytes of blocks without writing them (fallocate).
func allocate(f *os.File, n int64) error {
	return unix.Fallocate(int(f.Fd()), 0, 0, n)
}
