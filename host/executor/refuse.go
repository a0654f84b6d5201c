package executor

import (
	"context"
	"errors"
	"strings"

	"github.com/obversa/obversa/host/graph"
	"github.com/obversa/obversa/store"
)

// refuseResult records a settle the record refused as the node's failure,
// on a state already refolded from the record. The settle's engine-call
// records are kept without what the record may have refused in them
// (parts, message), so the calls and their usage stay counted; should the
// record refuse even those, the failure is recorded alone.
func (x *Executor) refuseResult(ctx context.Context, m message, cause error) ([]start, error) {
	code := store.Code(cause)
	if code == "STORAGE_LIMIT_EXCEEDED" {
		code = CodeResultTooLarge
	}
	fail := graph.FailedData{Node: m.node, Position: m.position, Code: code, Message: "the record refused the result: " + afterCode(cause)}
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
		if len(calls) == 0 || !(errors.Is(err, store.ErrKnownSecret) || errors.Is(err, store.ErrStorageLimitExceeded)) {
			return starts, err
		}
		if err := x.refold(ctx); err != nil {
			return nil, err
		}
		calls = nil
	}
}

// afterCode returns what err says after its store code ("KNOWN_SECRET:
// event 1 of 2 …" gives "event 1 of 2 …"): the failure carries the code
// beside its message, and the wrapping text before the code says what
// the message already says. err's whole text when it names no code.
func afterCode(err error) string {
	s := err.Error()
	if i := strings.Index(s, store.Code(err)+": "); i >= 0 {
		return s[i+len(store.Code(err))+2:]
	}
	return s
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
