//go:build !linux

package confine

import (
	"errors"
	"os"
	"os/exec"
)

// shimCommand fails: confinement needs Linux.
func shimCommand(payload, *os.File, []string) (*exec.Cmd, error) {
	return nil, errors.New("confinement needs Linux")
}

const unshareMountNS = 0
