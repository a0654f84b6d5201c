//go:build !linux

package conformance

import (
	"os"
)

// hostDeathSupported is false: the host's parent-death signal is Linux's.
const hostDeathSupported = false

func processGone(int) bool { return true }

// killProcess kills the process itself (no process groups here).
func killProcess(pid int) {
	if p, err := os.FindProcess(pid); err == nil {
		_ = p.Kill()
	}
}
