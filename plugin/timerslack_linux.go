package plugin

import (
	"os"
	"os/exec"
	"runtime"
	"strconv"

	"golang.org/x/sys/unix"
)

// startCmd starts cmd from a thread whose timer slack (prctl(2)
// PR_SET_TIMERSLACK) is the one TimerSlackEnv names, which the child
// inherits, and gives the thread its own slack back after. Without the
// variable, or when the slack cannot be read or set, it is cmd.Start.
// The thread stays locked only for the start, so it is not retired and
// the parent-death signal setProcAttr asks for keeps its thread.
func startCmd(cmd *exec.Cmd) error {
	want, err := strconv.Atoi(os.Getenv(TimerSlackEnv))
	if err != nil || want <= 0 {
		return cmd.Start()
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cur, err := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0)
	if err != nil || cur == want || unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(want), 0, 0, 0) != nil {
		return cmd.Start()
	}
	defer unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(cur), 0, 0, 0)
	return cmd.Start()
}
