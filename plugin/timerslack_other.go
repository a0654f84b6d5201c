//go:build !linux

package plugin

import "os/exec"

// startCmd is cmd.Start: timer slack is a Linux setting.
func startCmd(cmd *exec.Cmd) error { return cmd.Start() }
