package watchdog

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/obversa/obversa/host/graph"
	"github.com/obversa/obversa/host/runstate"
	"github.com/obversa/obversa/internal/failpoint"
	"github.com/obversa/obversa/store"
)

// appendFolded appends events as one batch at the revision st has folded
// — the revision the caller's decision was read from — and folds them, so
// st stays the record's state. Only a process that owns the run and has no
// live worker under it calls it (docs/decisions.md, "One writer"). A
// record that moved since is refused with an error wrapping
// store.ErrRevisionConflict.
func appendFolded(ctx context.Context, run store.Record, st *runstate.State, events ...store.NewEvent) error {
	if len(events) == 0 {
		return nil
	}
	raws := make([]json.RawMessage, len(events))
	for i := range events {
		b, err := json.Marshal(events[i].Data)
		if err != nil {
			return fmt.Errorf("marshal %s: %w", events[i].Type, err)
		}
		raws[i], events[i].Data = b, json.RawMessage(b)
	}
	if failpoint.Enabled {
		failpoint.Hit(ctx, failpoint.BeforeAppend, events[0].Type)
	}
	rev := st.Rev()
	if _, err := run.Append(ctx, rev, events...); err != nil {
		return err
	}
	if failpoint.Enabled {
		failpoint.Hit(ctx, failpoint.AfterAppend, events[0].Type)
	}
	for i, e := range events {
		if err := st.Apply(store.Event{Rev: rev + int64(i) + 1, Type: e.Type, Data: raws[i]}); err != nil {
			return err
		}
	}
	return nil
}

// endRun records the terminal result res that the watchdog or an operator
// command decided, after the events before, in one conditional append:
// every position still in flight first ends ABORTED (runstate.Aborted),
// and res carries the run's usage with those calls counted as unmeasured.
func endRun(ctx context.Context, run store.Record, st *runstate.State, res *runstate.Result, before ...store.NewEvent) error {
	events, usage := st.Aborted(res.Code)
	res.Usage = usage
	all := append(append(before, events...), store.NewEvent{Type: graph.EventRunFinished, Data: res})
	return appendFolded(ctx, run, st, all...)
}
