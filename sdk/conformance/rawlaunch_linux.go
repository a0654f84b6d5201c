package conformance

import (
	"os/exec"
	"runtime"
	"syscall"
)

// hostDeathSupported reports whether the kit can make a host die under a
// plugin (robust.host_death): the host's parent-death signal is Linux's.
const hostDeathSupported = true

// rawProcAttr gives a raw launch what plugin.Launch gives every plugin on
// Linux: SIGKILL when the thread that started it dies.
func rawProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// startOnDoomedThread starts the plugin from a thread of its own and
// returns a function that ends that thread. Ending it is the host's death
// as the plugin sees it: the kernel sends the parent-death signal the host
// set, exactly as when the host process dies.
func startOnDoomedThread(bin string, args, env, handshake []string) (*rawProcess, func(), error) {
	type started struct {
		p   *rawProcess
		err error
	}
	ch := make(chan started)
	die := make(chan struct{})
	go func() {
		// Never unlocked: when this goroutine returns, the runtime ends
		// its thread.
		runtime.LockOSThread()
		p, err := rawStart(bin, args, env, handshake)
		ch <- started{p, err}
		if err == nil {
			<-die
		}
	}()
	s := <-ch
	if s.err != nil {
		return nil, nil, s.err
	}
	return s.p, func() { close(die) }, nil
}
