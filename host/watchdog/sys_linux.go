package watchdog

import (
	"os"
	"os/exec"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// workerSysProcAttr puts the worker in its own process group and asks the
// kernel to send it SIGTERM when the watchdog dies.
func workerSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}

// startLocked starts cmd from a locked OS thread: the parent-death signal
// follows the thread that forked, and Go never retires it while the
// process lives.
func startLocked(cmd *exec.Cmd) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return cmd.Start()
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
