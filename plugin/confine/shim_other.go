//go:build !linux

package confine

import (
	"errors"
	"os/exec"
)

// shimCommand fails: confinement needs Linux.
func shimCommand(payload, []string) (*exec.Cmd, error) {
	return nil, errors.New("confinement needs Linux")
}

const unshareMountNS = 0
