package executor

import (
	"context"
	"fmt"

	"github.com/obversa/obversa/host/runstate"
	"github.com/obversa/obversa/store"
)

// recordResult appends b with the run's result of type typ
// (graph:run-finished or graph:run-waiting) in one write, and returns the
// result as folded. A result whose output would not fit in an event
// records it compacted (Result.Compact: the graph members stay in the
// record they came from). Should the record's policy refuse a result
// recorded alone (b empty), it is recorded compacted and without what it
// may have been refused for, so that the end of a run whose work is done
// is always recorded (docs/decisions.md, "The run output").
func (x *Executor) recordResult(ctx context.Context, b batch, typ string, res *runstate.Result) (*runstate.Result, error) {
	if res.Usage == nil {
		res.Usage = x.rs.RunUsage()
	}
	alone := len(b) == 0
	if !x.fitsEvent(len(mustJSON(res))) {
		res = res.Compact()
	}
	if err := x.add(&b, typ, res); err != nil {
		return nil, err
	}
	err := x.commit(ctx, b)
	if alone && refusedByRecord(err) {
		if err := x.refold(ctx); err != nil {
			return nil, err
		}
		kept := &runstate.Result{RunID: res.RunID, Kind: res.Kind, Code: res.Code, Usage: res.Usage, Output: &runstate.Output{FromRecord: true,
			Message: fmt.Sprintf("the record refused the result's output (%s); the graph's part of it is restored from the record", store.Code(err))}}
		b = nil
		if err := x.add(&b, typ, kept); err != nil {
			return nil, err
		}
		err = x.commit(ctx, b)
	}
	if err != nil {
		return nil, err
	}
	return x.rs.Result(), nil
}
