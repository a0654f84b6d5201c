package watchdog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/obversa/obversa/host/executor"
	"github.com/obversa/obversa/host/graph"
	"github.com/obversa/obversa/host/runstate"
	"github.com/obversa/obversa/internal/failpoint"
	"github.com/obversa/obversa/internal/runecut"
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
	return endInterrupted(ctx, run, st, res, time.Time{}, before...)
}

// endInterrupted is endRun for a run that was interrupted at cutOff (the
// time it was last recorded) and is ended later: the positions in flight
// were cut off then (runstate.State.Aborted).
func endInterrupted(ctx context.Context, run store.Record, st *runstate.State, res *runstate.Result, cutOff time.Time, before ...store.NewEvent) error {
	events, usage := st.Aborted(res.Code, cutOff)
	res.Usage = usage
	all := append(append(before, events...), store.NewEvent{Type: graph.EventRunFinished, Data: res})
	return appendFolded(ctx, run, st, all...)
}

// record appends one watchdog event at the revision of the supervisor's
// fold and folds it. It runs only while no worker lives; a conflict means
// another process wrote the run and is returned as is.
//
// A record refused for a full device is tried once more after the run's
// reserve file is removed (reserve.go): what the watchdog records is what
// explains the run's state.
func (s *supervisor) record(ctx context.Context, typ string, data any) error {
	err := appendFolded(ctx, s.run, s.rs, store.NewEvent{Type: typ, Data: data})
	if errors.Is(err, store.ErrStorageFull) && s.reserve.release() {
		s.o.Logger.Warn("the device is full; the reserved room is used to record it", "error", err)
		err = appendFolded(ctx, s.run, s.rs, store.NewEvent{Type: typ, Data: data})
	}
	return err
}

// notRecorded says that the pause of fault f could not be recorded
// because of fault g, saying only what f's message has not said: nothing
// more when g is f's failure again, g's problem when it shares f's code,
// else g's code and problem.
func notRecorded(f, g *executor.Fault) string {
	switch {
	case g.Code == f.Code && g.Path == f.Path:
		return " (this pause could not be recorded either)"
	case g.Code == f.Code:
		return fmt.Sprintf(" (this pause could not be recorded either: %s)", g.Problem)
	}
	return fmt.Sprintf(" (this pause could not be recorded either: %s %s)", g.Code, g.Problem)
}

// faultPause records the pause a worker's fault stands for, and the pause
// anchor when the record can take it. When not even the pause can be
// recorded, the result says so and is returned unrecorded: the record
// then shows a worker that ended without a result, which `obversa resume`
// takes over once the record can be written.
func (s *supervisor) faultPause(ctx context.Context, ws *guard, f *executor.Fault) (*runstate.Result, error) {
	res := f.Result(s.plan.RunID)
	res.Output.Message = s.message(s.withRun(res.Output.Message))
	if err := s.record(ctx, graph.EventRunWaiting, res); err != nil {
		if executor.FaultOf(err) == nil {
			return nil, err
		}
		res.Output.Message += notRecorded(f, executor.FaultOf(err))
		return res, nil
	}
	if _, err := ws.save(ctx, s, runstate.EventPauseAnchor); err != nil {
		if executor.FaultOf(err) == nil {
			return nil, err
		}
		// Without an anchor, resume checks the workspace as after a
		// crash (checkWorkspace).
		s.o.Logger.Warn("the pause anchor could not be recorded", "error", err)
	}
	return res, nil
}

// finish records a result the watchdog decided.
func (s *supervisor) finish(ctx context.Context, code, detail string) (*runstate.Result, error) {
	if s.rs.CleanupVerified() == nil {
		// No cleanup since the last worker (none ran under this
		// watchdog): look now, so the result says what is left.
		if _, err := s.cleanup(ctx); err != nil {
			return nil, err
		}
	}
	res := runstate.Message(s.plan.RunID, runstate.KindFail, code, s.message(detail))
	if err := endRun(ctx, s.run, s.rs, res); err != nil {
		return nil, err
	}
	return res, nil
}

// maxMessageBytes bounds a message the watchdog records (a result's, a
// worker exit's cause), so that no message can make its event too large.
const maxMessageBytes = 4096

// message is text as the watchdog records it: known secrets redacted, cut
// to maxMessageBytes.
func (s *supervisor) message(text string) string {
	return capText(redactor(Policy(s.plan))(text), maxMessageBytes)
}

// capText cuts text to at most n bytes on a rune boundary, marking the cut.
func capText(text string, n int) string {
	if len(text) <= n {
		return text
	}
	const mark = " … (cut)"
	return runecut.Prefix(text, n-len(mark)) + mark
}
