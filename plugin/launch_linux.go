package plugin

import (
	"os/exec"
	"syscall"
)

// setProcAttr makes the kernel SIGKILL the plugin when the thread that
// started it dies, so a crashed host leaves no plugin behind. Go keeps that
// thread alive unless it is a locked thread whose goroutine exits, which the
// launch path never does.
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
