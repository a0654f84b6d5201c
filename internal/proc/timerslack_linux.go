package proc

import (
	"os/exec"
	"runtime"

	"golang.org/x/sys/unix"
)

// StartWithTimerSlack starts cmd from an OS thread locked for the start
// whose timer slack (prctl(2) PR_SET_TIMERSLACK, in ns), which the child
// inherits, is what slack returns for the thread's own; the thread gets
// its own slack back after (docs/decisions.md, "The worker's timer
// slack"). slack is called once, before the start, and only when the
// thread's slack can be read; where it returns the thread's own slack or
// less than 1, or the slack cannot be set, cmd starts with the thread's
// own. The lock keeps the forking thread alive while cmd.Start runs, so a
// parent-death signal cmd asks for follows a thread Go does not retire.
// It returns cmd.Start's error.
func StartWithTimerSlack(cmd *exec.Cmd, slack func(own int) int) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	own, err := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0)
	if err != nil {
		return cmd.Start()
	}
	if want := slack(own); want > 0 && want != own && unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(want), 0, 0, 0) == nil {
		defer unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(own), 0, 0, 0)
	}
	return cmd.Start()
}
