package watchdog

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/obversa/obversa/host/graph"
	"github.com/obversa/obversa/host/runstate"
	"github.com/obversa/obversa/store"
)

// ErrOtherHost is returned by Approve and the operator commands that
// reach a live run's processes when the run is live on another host: they
// act on this host only.
var ErrOtherHost = errors.New("the run is live on another host")

// ErrNotAnswered is returned by Approve when the run's live worker did
// not answer the request within the timeout. The message says whether
// the request was withdrawn (nothing can be recorded for it any more) or
// taken by the worker (the record tells later whether it was recorded).
var ErrNotAnswered = errors.New("APPROVAL_NOT_ANSWERED")

// DefaultApproveTimeout bounds how long Approve waits for a live worker.
const DefaultApproveTimeout = 30 * time.Second

// approvePoll is how often Approve looks for an answer or a free lock.
const approvePoll = 20 * time.Millisecond

// Approval is what Approve recorded.
type Approval struct {
	Position string
	Decision string
	// Request is the id of the request a live worker answered; empty when
	// Approve recorded the decision itself (no worker lived).
	Request string
}

// Approve records an operator's decision on an approval pause
// (graph:approval-decided) with the run's single writer (docs/decisions.md,
// "One writer"): when nothing holds the run, Approve takes its lock and
// appends at the revision it read; when a watchdog holds it, Approve
// leaves a request in the run's request queue for the live worker, which
// records the decision itself (and offers the position again at once) or
// refuses it, and Approve waits up to timeout for the answer (0:
// DefaultApproveTimeout). Two decisions for one position: exactly one is
// recorded, the other fails with ErrAlreadyDecided naming it — also when
// the record answers before any worker took the request (it is then
// withdrawn). Errors:
// runstate.ErrNotAwaitingApproval, ErrAlreadyDecided, ErrNotAnswered,
// store errors.
func Approve(ctx context.Context, ref Ref, position string, deny bool, timeout time.Duration) (*Approval, error) {
	decision := graph.DecisionAllow
	if deny {
		decision = graph.DecisionDeny
	}
	if timeout <= 0 {
		timeout = DefaultApproveTimeout
	}
	run, st, err := openRun(ctx, ref)
	if err != nil {
		return nil, err
	}
	defer run.Close()
	a := &approver{ref: ref, run: run, st: st, q: newRequestQueue(run.Dir()), position: position, decision: decision}
	deadline := time.Now().Add(timeout)
	for {
		done, err := a.step(ctx)
		if done || err != nil {
			return a.result(), err
		}
		if time.Now().After(deadline) {
			return nil, a.giveUp(timeout)
		}
		select {
		case <-ctx.Done():
			return nil, errors.Join(ctx.Err(), a.giveUp(timeout))
		case <-time.After(approvePoll):
		}
	}
}

// approver is one Approve call in progress.
type approver struct {
	ref                Ref
	run                store.Record
	st                 *runstate.State
	q                  *requestQueue
	position, decision string
	request            string // the queued request's id, once queued
	recordedBy         string // the request id the decision was recorded with
}

func (a *approver) result() *Approval {
	return &Approval{Position: a.position, Decision: a.decision, Request: a.recordedBy}
}

// step makes one attempt: record under the lock when it is free, else
// queue the request (once) for the live worker and look for its answer.
func (a *approver) step(ctx context.Context) (bool, error) {
	lock, err := a.run.Lock(ctx)
	switch {
	case err == nil:
		defer lock.Release()
		return true, a.recordOwned(ctx)
	case !errors.Is(err, store.ErrProcessLocked):
		return false, lockRefusal(err, a.ref)
	}
	if a.request == "" {
		// The queue is a directory beside the record on the owner's host:
		// a worker on another host never sees it.
		if o, err := a.ref.Owner(ctx, a.run); err == nil && o.Live && !o.Here {
			return false, fmt.Errorf("%w: the run is live on host %q (pid %d), and its worker takes approvals only from that host: run `obversa approve` there, or wait for the run to pause",
				ErrOtherHost, o.Holder.Host, o.Holder.PID)
		}
		// Refuse at once what the record already answers.
		if err := a.st.CatchUp(ctx, a.run); err != nil {
			return false, err
		}
		if _, err := a.st.CheckApproval(a.position); err != nil {
			return false, err
		}
		if a.request, err = a.q.put(a.position, a.decision); err != nil {
			return false, fmt.Errorf("queueing the approval request: %w", err)
		}
		return false, nil
	}
	if ans, ok := a.q.answer(a.request); ok {
		if !ans.Recorded {
			return false, ans.err()
		}
		a.recordedBy = a.request
		return true, nil
	}
	// The record may answer first: the worker recorded another request
	// for the position (and, no position waiting any more, takes no
	// further requests), or the position stopped waiting. A request no
	// worker took is then withdrawn and refused with what the record
	// says; one a worker took is answered by it.
	if err := a.st.CatchUp(ctx, a.run); err != nil {
		return false, err
	}
	if _, err := a.st.CheckApproval(a.position); err != nil && a.q.withdraw(a.request) {
		return false, err
	}
	return false, nil
}

// recordOwned records the decision while this process owns the run (no
// worker lives): at the revision it reads under the lock. A request it
// queued earlier is withdrawn first, or — when a worker claimed it before
// dying — looked up in the record.
func (a *approver) recordOwned(ctx context.Context) error {
	if err := a.st.CatchUp(ctx, a.run); err != nil {
		return err
	}
	if a.request != "" && !a.q.withdraw(a.request) {
		if ans, ok := a.q.answer(a.request); ok && !ans.Recorded {
			return ans.err()
		}
		if _, ok := a.st.Request(a.request); ok {
			a.recordedBy = a.request
			return nil
		}
		a.q.drop(a.request) // claimed by a worker that died before recording it
	}
	if _, err := a.st.CheckApproval(a.position); err != nil {
		return err
	}
	err := appendFolded(ctx, a.run, a.st, store.NewEvent{Type: graph.EventApproval,
		Data: graph.ApprovalData{Position: a.position, Decision: a.decision}})
	return conflictHint(err, a.ref)
}

// giveUp ends a wait that timed out: a request no worker claimed is
// withdrawn; one a worker took may still be recorded.
func (a *approver) giveUp(timeout time.Duration) error {
	switch {
	case a.request == "":
		return fmt.Errorf("%w: the run was held by another process for %s and no live worker took the request; nothing was recorded", ErrNotAnswered, timeout)
	case a.q.withdraw(a.request):
		return fmt.Errorf("%w: the run's worker did not take request %s within %s (it takes approvals while a position waits for one); the request was withdrawn and nothing was recorded", ErrNotAnswered, a.request, timeout)
	}
	return fmt.Errorf("%w: the run's worker took request %s but did not answer within %s; `obversa events` shows graph:approval-decided with this request if it was recorded", ErrNotAnswered, a.request, timeout)
}
