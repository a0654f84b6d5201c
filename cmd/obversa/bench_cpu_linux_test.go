package main

import (
	"testing"
	"time"

	"github.com/obversa/obversa/internal/proc"
)

// cpuUsed returns the CPU time (user and system) this process and the
// process pid have used so far (proc.SelfCPU, proc.CPU: ns, not clock
// ticks). CPU time per call moves far less than wall time on a machine
// others load (docs/decisions.md, "Benchmarks").
func cpuUsed(b *testing.B, pid int) (self, other time.Duration) {
	b.Helper()
	self, err := proc.SelfCPU()
	if err != nil {
		b.Fatal(err)
	}
	other, err = proc.CPU(pid)
	if err != nil {
		b.Fatalf("reading the CPU time of process %d: %v", pid, err)
	}
	return self, other
}
