package executor

import "context"

// Crash points a Fault may fire at (the crash table of DESIGN §5).
const (
	// FaultAfterDispatch fires once the dispatch decision naming the node
	// is durable and before its attempt-started is written.
	FaultAfterDispatch = "after-dispatch"
	// FaultAfterStart fires once the node's attempt-started is durable and
	// before its code is called.
	FaultAfterStart = "after-start"
	// FaultAfterResult fires once the node's result is durable.
	FaultAfterResult = "after-result"
)

// Fault injects a crash at an exact point of the record, for the crash
// tests that must stop a worker between two writes no signal could aim
// at. Production runs leave Options.Fault nil.
type Fault interface {
	// Armed reports whether to crash at point for node.
	Armed(point, node string) bool
	// Fire crashes the process; it does not return.
	Fire()
}

// fault makes what b holds durable and fires the fault when it is armed
// for point and node.
func (x *Executor) fault(ctx context.Context, b *batch, point, node string) error {
	if x.o.Fault == nil || !x.o.Fault.Armed(point, node) {
		return nil
	}
	if b != nil {
		if err := x.commit(ctx, *b); err != nil {
			return err
		}
		*b = nil
	}
	x.o.Fault.Fire()
	return nil
}
