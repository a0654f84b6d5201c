package executor

import (
	"context"
	"encoding/json"

	"github.com/obversa/obversa/host/graph"
)

// A dispatch decision is as wide as the graph's ready units within its
// concurrency limits, which the run file may set to thousands. What it
// records must still fit the record's limits (docs/decisions.md, "A large
// dispatch decision is recorded in parts"): its graph:node-dispatched is
// split into leading parts that each fit max_event_payload_bytes, and a
// batch stops taking dispatches once it holds half of max_batch_bytes,
// leaving the rest of the decision to the next batch. What attempts hand
// over is grouped into one append only while the group stays within half
// of max_batch_bytes too, so that a group of large results is not refused
// whole and taken apart again.

// dispatchListBytes is the canonical size of an empty dispatch list's
// event data, {"dispatches":[]}; dispatchEntryBytes the size of one
// entry's fixed text, {"node":"","position":""} and its comma. Node ids
// and positions are made of [A-Za-z0-9._/-] and for_each keys, which are
// counted at the most their escaping can take (escapeFactor).
const (
	dispatchListBytes  = len(`{"dispatches":[]}`)
	dispatchEntryBytes = len(`{"node":"","position":""},`)
	escapeFactor       = 6
)

// dispatchFit returns how many of ds, from the first, one
// graph:node-dispatched holds within max_event_payload_bytes; at least
// one (a limit too small for one entry is refused by the record, and by
// the run file's minimum before that).
func (x *Executor) dispatchFit(ds []graph.Dispatch) int {
	limit := x.plan.Storage.MaxEventPayloadBytes
	if limit <= 0 {
		return len(ds)
	}
	n := int64(dispatchListBytes)
	for i, d := range ds {
		n += int64(dispatchEntryBytes + len(d.Node) + escapeFactor*len(d.Position))
		if n > limit {
			return max(i, 1)
		}
	}
	return len(ds)
}

// envelopeBytes is the room counted for each event's line besides its
// data: rev, batch_end, id, ts, type, prev and digest.
const envelopeBytes = 400

// batchFill measures a batch as decide fills it, counting only the events
// added since it last looked.
type batchFill struct {
	seen  int
	bytes int64
}

// reached reports whether b holds half of max_batch_bytes or more, so that
// decide leaves further dispatches to the next batch. An empty batch is
// never full, so each batch decideMore starts records some of the rest.
func (f *batchFill) reached(x *Executor, b batch) bool {
	limit := x.plan.Storage.MaxBatchBytes
	if limit <= 0 {
		return false
	}
	for _, e := range b[f.seen:] {
		raw, _ := e.Data.(json.RawMessage)
		f.bytes += int64(len(raw)) + envelopeBytes
	}
	f.seen = len(b)
	return f.bytes*2 >= limit
}

// decideMore records, in a batch of its own, what the last decide left
// undecided because its batch was full, and returns the attempts to
// launch. Errors are decide's and commit's.
func (x *Executor) decideMore(ctx context.Context) ([]start, error) {
	var b batch
	starts, err := x.decide(&b)
	if err != nil {
		return nil, err
	}
	if err := x.commit(ctx, b); err != nil {
		return nil, err
	}
	return starts, nil
}

// groupBytes measures the attempt messages grouped into one append.
type groupBytes struct {
	limit, bytes int64
}

// groupFill starts measuring a group with its first message m.
func (x *Executor) groupFill(m message) groupBytes {
	g := groupBytes{limit: x.plan.Storage.MaxBatchBytes}
	g.add(m)
	return g
}

// add counts m's events.
func (g *groupBytes) add(m message) {
	if g.limit <= 0 {
		return
	}
	for _, e := range m.events {
		raw, _ := e.Data.(json.RawMessage)
		g.bytes += int64(len(raw)) + envelopeBytes
	}
}

// full reports whether the group holds half of max_batch_bytes or more.
func (g *groupBytes) full() bool { return g.limit > 0 && g.bytes*2 >= g.limit }
