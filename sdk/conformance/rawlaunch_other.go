//go:build !linux

package conformance

import (
	"errors"
	"os/exec"
)

// hostDeathSupported is false: the host's parent-death signal is Linux's.
const hostDeathSupported = false

// rawProcAttr does nothing: only Linux has a parent-death signal.
func rawProcAttr(*exec.Cmd) {}

func startOnDoomedThread(string, []string, []string, []string) (*rawProcess, func(), error) {
	return nil, nil, errors.New("a host's death can only be simulated on Linux")
}
