package watchdog

import "runtime"

// collectStartGarbage starts one garbage collection, on a goroutine of its
// own, between the worker's start-up (the fold of the record, the plan)
// and its executor's first dispatch, while the plugins start. What
// start-up left behind is freed, and this first collection hands the
// worker's collector from its start-up setting (off until 64 MiB:
// cmd/obversa's collectLate) to the default pacing, so the executor's
// short-lived allocations (events, engine calls: about 11 KB per node)
// reuse memory the process already has instead of faulting in fresh pages
// for every node (docs/decisions.md, "The worker collects garbage late").
// A GOGC or GOMEMLIMIT the user gave is kept; the collection is then one
// more, early.
func collectStartGarbage() { go runtime.GC() }
