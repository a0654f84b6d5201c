//go:build !linux

package proc

import "os/exec"

// StartWithTimerSlack is cmd.Start: timer slack is a Linux setting, and
// slack is not called.
func StartWithTimerSlack(cmd *exec.Cmd, slack func(own int) int) error { return cmd.Start() }
