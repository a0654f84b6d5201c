//go:build !linux

package store

// processStartTime is not available without /proc: no process matches.
func processStartTime(pid int) (uint64, bool) { return 0, false }

// bootID is unknown without /proc.
func bootID() string { return "" }
