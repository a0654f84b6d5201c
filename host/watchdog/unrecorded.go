package watchdog

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/obversa/obversa/host/executor"
	"github.com/obversa/obversa/host/runstate"
	"github.com/obversa/obversa/store"
)

// resumeHint is how a storage fault's message ends (executor.FaultOf):
// the watchdog names the run after it.
const resumeHint = "`obversa resume`"

// withRun names the run in a fault message that ends telling to carry the
// run on with `obversa resume`, so that the hint is a command to type.
func (s *supervisor) withRun(msg string) string {
	if base, ok := strings.CutSuffix(msg, resumeHint); ok {
		return base + "`obversa resume " + s.ref.Shell() + "`"
	}
	return msg
}

// unrecordedPause ends supervision when the record could not be read or
// written after a worker ended — the fence, the catch-up, the watchdog's
// own appends — because of a storage fault (executor.FaultOf: a database
// that is down, a file system that fails): the run pauses, and the pause
// is returned unrecorded, as when faultPause cannot record it
// (docs/decisions.md, "Storage faults pause the run"). f is the fault the
// worker reported, if any, which the pause stands for; else err's.
// Every process of the run on this host is stopped first. Nothing is
// appended: the watchdog's fold may be behind the record, and an append
// at its revision would be refused anyway. The record then shows a worker
// that ended without a result, which `obversa resume` takes over once the
// record can be read and written. An error that is no storage fault, or
// the loss of the run's ownership, is returned as it is.
func (s *supervisor) unrecordedPause(ctx context.Context, f *executor.Fault, err error) (*runstate.Result, error) {
	g := executor.FaultOf(err)
	if g == nil || errors.Is(err, store.ErrNotOwner) {
		return nil, err
	}
	if f == nil {
		f = g
	}
	found, left := stopRun(ctx, s.marker, s.plan.TeardownGrace())
	if len(found) > 0 {
		reapOrphans()
	}
	res := f.Result(s.plan.RunID)
	msg := s.withRun(res.Output.Message) + notRecorded(f, g)
	if len(left) > 0 {
		msg += fmt.Sprintf("; %d processes of the run survived SIGKILL", len(left))
	}
	res.Output.Message = s.message(msg)
	s.o.Logger.Error("the run's pause could not be recorded", "run", s.ref.String(), "error", err)
	return res, nil
}
