package plugin

import (
	"os/exec"
	"syscall"
)

// setProcAttr makes the kernel SIGKILL the plugin when the thread that
// started it dies, so a crashed host leaves no plugin behind. Go keeps that
// thread alive unless it is a locked thread whose goroutine exits, which the
// launch path never does. The plugin leads its own process group, so a
// signal meant for the host's group does not reach it, and killGroup can
// stop whatever it started before its handshake.
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
}

// killGroup SIGKILLs the plugin's process group (a no-op before start).
func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil && cmd.Process.Pid > 0 {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
