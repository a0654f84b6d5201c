package executor

import (
	"context"
	"errors"
	"time"

	"github.com/obversa/obversa/host/graph"
)

// ApprovalRequest is an operator's decision on an approval pause, left
// for the live worker that owns the run (docs/decisions.md, "One
// writer"): only the worker appends while it lives, so an operator asks
// and the worker records.
type ApprovalRequest struct {
	// ID identifies the request; the recorded decision carries it.
	ID       string
	Position string
	// Decision is graph.DecisionAllow or graph.DecisionDeny.
	Decision string
}

// Requests is the queue of approval requests of a live run.
type Requests interface {
	// Pending returns the requests not yet answered, oldest first.
	Pending() ([]ApprovalRequest, error)
	// Answer replies to a request: err nil once its decision is durable
	// in the record, else why it was refused.
	Answer(id string, err error)
}

// requestPollInterval is how often a live worker looks for approval
// requests while a position waits for one (and only then).
const requestPollInterval = 100 * time.Millisecond

// requestPoll is the loop's ticker for approval requests: it runs only
// while a position waits for approval.
type requestPoll struct{ t *time.Ticker }

// tick returns the ticker's channel while on is set, nil (never ready)
// otherwise.
func (p *requestPoll) tick(on bool) <-chan time.Time {
	if !on {
		p.stop()
		return nil
	}
	if p.t == nil {
		p.t = time.NewTicker(requestPollInterval)
	}
	return p.t.C
}

func (p *requestPoll) stop() {
	if p.t != nil {
		p.t.Stop()
		p.t = nil
	}
}

// answerRequests applies the pending approval requests in order, checking
// each against the fold: a position that waits for approval gets the
// decision (graph:approval-decided with the request id), is offered again
// (graph:node-resumed) and gated at once — an allowed position starts, a
// denied one fails DENIED — all in one append; anything else is refused
// with the reason (already decided, not waiting). Answers go out once the
// append is durable.
func (x *Executor) answerRequests(ctx context.Context) ([]start, error) {
	reqs, err := x.o.Requests.Pending()
	if err != nil {
		x.log.Warn("reading approval requests", "error", err)
		return nil, nil
	}
	var b batch
	var starts []start
	var recorded []string
	for _, r := range reqs {
		if _, ok := x.rs.Request(r.ID); ok {
			x.o.Requests.Answer(r.ID, nil) // recorded earlier; the answer was lost
			continue
		}
		n, err := x.rs.CheckApproval(r.Position)
		if err == nil && r.Decision != graph.DecisionAllow && r.Decision != graph.DecisionDeny {
			err = errors.New("the decision must be allow or deny")
		}
		if err != nil {
			x.o.Requests.Answer(r.ID, err)
			continue
		}
		if err := x.add(&b, graph.EventApproval, graph.ApprovalData{Position: r.Position, Decision: r.Decision, Request: r.ID}); err != nil {
			return nil, err
		}
		if err := x.add(&b, graph.EventNodeResumed, graph.ResumedData{Node: n.Def.ID, Position: n.Position, Reason: graph.ResumedApproval}); err != nil {
			return nil, err
		}
		s, err := x.gate(&b, n)
		if err != nil {
			return nil, err
		}
		starts = append(starts, s...)
		recorded = append(recorded, r.ID)
	}
	if len(recorded) == 0 {
		return nil, nil
	}
	more, err := x.decide(&b)
	if err != nil {
		return nil, err
	}
	if err := x.commit(ctx, b); err != nil {
		return nil, err
	}
	for _, id := range recorded {
		x.o.Requests.Answer(id, nil)
	}
	return append(starts, more...), nil
}
