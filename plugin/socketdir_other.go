//go:build !unix

package plugin

import "os"

// privateDir cannot check ownership here; a fresh temporary directory is
// used instead.
func privateDir(string, int) bool { return false }

// makeOwnDir makes this process's directory in base. Without flock(2) it
// is not locked, and sweepDead leaves every directory alone.
func makeOwnDir(base string) (string, error) { return os.MkdirTemp(base, hostDirPrefix) }

// sweepDead does nothing here: no lock tells a dead owner's directory.
func sweepDead(string) {}
