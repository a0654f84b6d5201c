package main

import (
	"math"
	"os"
	"runtime"
	"runtime/debug"
)

// collectLate turns the garbage collector off until the Go runtime's
// memory first nears bound (bytes; a memory limit), and from that first
// collection on leaves the process to the default pacing (GOGC=100, no
// memory limit): a process whose whole life allocates less than bound
// never collects, one that allocates more collects as it would have from
// there on, and no heap larger than the bound is collected again and
// again at the limit (the runtime lets the collector take up to half the
// CPU then). A GOGC or GOMEMLIMIT the user set is kept as set. Used by a
// one-shot status (docs/decisions.md, "A one-shot status collects
// garbage late") and by the worker ("The worker collects garbage late").
func collectLate(bound int64) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	debug.SetGCPercent(-1)
	debug.SetMemoryLimit(bound)
	// The first collection finds the sentinel unreachable.
	runtime.AddCleanup(&gcSentinel{}, func(struct{}) {
		debug.SetGCPercent(100)
		debug.SetMemoryLimit(math.MaxInt64)
	}, struct{}{})
}

// gcSentinel is an object no one references: its cleanup runs after the
// first collection. Larger than 16 bytes, so that it is not placed in
// a block shared with other small objects, which could keep it alive.
type gcSentinel struct{ _ [32]byte }
