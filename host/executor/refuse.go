package executor

import (
	"context"
	"errors"

	"github.com/obversa/obversa/host/graph"
	"github.com/obversa/obversa/store"
)

// refuseResult records a settle the record refused as the node's failure,
// on a state already refolded from the record. The settle's engine-call
// records are kept without what the record may have refused in them
// (parts, message), so the calls and their usage stay counted; should the
// record refuse even those, the failure is recorded alone.
func (x *Executor) refuseResult(ctx context.Context, m message, cause error) ([]start, error) {
	code := refusedCode(cause)
	fail := graph.FailedData{Node: m.node, Position: m.position, Code: code, Message: "the record refused the result: " + store.Problem(cause)}
	calls := refusedCalls(m.events, code)
	for {
		var b batch
		for _, c := range calls {
			if err := x.add(&b, graph.EventEngineAttempt, c); err != nil {
				return nil, err
			}
		}
		if err := x.add(&b, graph.EventNodeFailed, fail); err != nil {
			return nil, err
		}
		starts, err := x.decide(&b)
		if err != nil {
			return nil, err
		}
		err = x.commit(ctx, b)
		if len(calls) == 0 || !refusedByRecord(err) {
			return starts, err
		}
		if err := x.refold(ctx); err != nil {
			return nil, err
		}
		calls = nil
	}
}

// refusedByRecord reports whether err is the record's refusal of what a
// batch holds rather than a failure to write it: a known secret, a value
// over a storage limit, or data without an exact canonical form (a
// plugin's number beyond a double's precision, a duplicate member name).
// Nothing was written, and the value came from a plugin's answer or an
// output, so the node it belongs to fails and the run goes on.
func refusedByRecord(err error) bool {
	return errors.Is(err, store.ErrKnownSecret) || errors.Is(err, store.ErrStorageLimitExceeded) || errors.Is(err, store.ErrNotCanonical)
}

// refusedCalls returns the engine-call records among events without their
// parts and message, marked with the code the record refused them with.
func refusedCalls(events []event, code string) []graph.EngineAttemptData {
	var out []graph.EngineAttemptData
	for _, e := range events {
		if c, ok := e.v.(graph.EngineAttemptData); ok {
			c.Parts, c.PartsArtifact, c.Message, c.Refused = nil, nil, "", code
			out = append(out, c)
		}
	}
	return out
}

// refusedCode is the code a node fails with when the record refuses what
// its attempt would record (refusedByRecord): the store's code, with a
// value over a storage limit as RESULT_TOO_LARGE.
func refusedCode(cause error) string {
	if code := store.Code(cause); code != "STORAGE_LIMIT_EXCEEDED" {
		return code
	}
	return CodeResultTooLarge
}

// refusedError is an intermediate record the record refused, handed back
// to its attempt: it matches errRefused and the store's refusal, and
// reads as the refusal alone.
type refusedError struct{ err error }

func (e *refusedError) Error() string   { return e.err.Error() }
func (e *refusedError) Unwrap() []error { return []error{errRefused, e.err} }
