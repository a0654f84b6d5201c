package conformance_test

import (
	"syscall"
	"time"

	"github.com/obversa/obversa/internal/proc"
)

// leftRunning waits up to d for no live process to carry kv and returns
// the pids of those that still do, SIGKILLed so that they end with the
// test.
func leftRunning(kv string, d time.Duration) []int {
	var pids []int
	for deadline := time.Now().Add(d); ; time.Sleep(20 * time.Millisecond) {
		ps, _ := proc.Marked(kv, nil)
		pids = pids[:0]
		for _, p := range ps {
			pids = append(pids, p.PID)
		}
		if len(pids) == 0 || time.Now().After(deadline) {
			break
		}
	}
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	return pids
}
