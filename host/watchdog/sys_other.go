//go:build !linux

package watchdog

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"

	"golang.org/x/sys/unix"
)

// errPlatform is returned where a run would start a worker: the
// watchdog finds and stops a run's processes through /proc, a
// parent-death signal and cgroups, which only Linux has.
var errPlatform = fmt.Errorf("running a worker is not supported on this platform (the watchdog needs Linux): %w", errors.ErrUnsupported)

// workerSysProcAttr puts the worker in a process group of its own; there
// is no parent-death signal here.
func workerSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// startLocked refuses: see errPlatform.
func startLocked(*exec.Cmd) error { return errPlatform }

// reapOrphans does nothing: the watchdog is no child subreaper here.
func reapOrphans() {}

// allocate reports that f cannot be allocated without writing: the
// reserve is written as zeros instead.
func allocate(*os.File, int64) error { return unix.EOPNOTSUPP }
