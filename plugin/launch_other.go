//go:build !linux

package plugin

import (
	"os"
	"os/exec"
)

// setProcAttr has no portable equivalent of Linux's parent-death signal;
// the watchdog's process cleanup covers other systems.
func setProcAttr(*exec.Cmd) {}

// killGroup kills the plugin process itself (no process groups here).
func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = cmd.Process.Kill()
	}
}

// exiting cannot tell an exiting process here; a plugin the host killed
// and one that died by itself read the same.
func exiting(int) bool { return false }

// unread cannot tell here how many bytes a pipe holds: the pipes are
// drained for pipeDrain only.
func unread(*os.File) int { return 0 }

// execFD returns "": without Linux's /proc/self/fd the plugin is
// executed by its path.
func execFD(*os.File, int) string { return "" }

// setUnshare does nothing: confinement needs Linux.
func setUnshare(*exec.Cmd, uintptr) {}
