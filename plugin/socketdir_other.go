//go:build !unix

package plugin

import (
	"fmt"
	"os"
	"strings"
)

// privateProblem cannot check ownership here: it says so for every dir,
// and fallbackBase makes a fresh temporary directory instead.
func privateProblem(dir string, _ int) string { return dir + ": ownership is not checked here" }

// fallbackBase makes a fresh directory under /tmp, else os.TempDir(), for
// this process's life. Nothing sweeps here (sweepDead), so no stable
// directory is needed.
func fallbackBase(_ string, problems []string) (string, error) {
	for _, parent := range []string{"/tmp", os.TempDir()} {
		if d, err := os.MkdirTemp(parent, "obversa-"); err == nil {
			return d, nil
		}
	}
	return "", fmt.Errorf("%w: /tmp and %s are not writable (%s)", ErrSocketDir, os.TempDir(), strings.Join(problems, "; "))
}

// makeOwnDir makes this process's directory in base. Without flock(2) it
// is not locked, and sweepDead leaves every directory alone.
func makeOwnDir(base string) (string, error) { return os.MkdirTemp(base, hostDirPrefix) }

// sweepDead does nothing here: no lock tells a dead owner's directory.
func sweepDead(string) {}
