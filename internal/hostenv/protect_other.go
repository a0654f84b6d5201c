//go:build !linux

package hostenv

// Protect does nothing here: there is no /proc/<pid>/environ to hide.
func Protect() error { return nil }
