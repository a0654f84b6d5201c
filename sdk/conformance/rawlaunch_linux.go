package conformance

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"syscall"
)

// hostDeathSupported reports whether the kit can make a host die under a
// plugin (robust.host_death): the host's parent-death signal is Linux's.
const hostDeathSupported = true

// processGone reports whether pid no longer runs: it does not exist, or it
// is a zombie waiting for a parent that may never reap it.
func processGone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return errors.Is(err, os.ErrNotExist)
	}
	// The state follows the command name in parentheses: "pid (comm) S …".
	if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) {
		return stat[i+2] == 'Z' || stat[i+2] == 'X'
	}
	return false
}

// killProcess sends SIGKILL to pid and to the process group it leads.
func killProcess(pid int) {
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	_ = syscall.Kill(pid, syscall.SIGKILL)
}
