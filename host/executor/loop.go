package executor

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/obversa/obversa/hcl"
	"github.com/obversa/obversa/host/graph"
	"github.com/obversa/obversa/host/plan"
	"github.com/obversa/obversa/host/runstate"
	"github.com/obversa/obversa/internal/failpoint"
)

// start is an attempt the loop decided to run once its batch is durable.
type start struct {
	node     *graph.NodeDef
	position string
	attempt  string
	seq      int
	// scope holds what the node's templates may read (scopeOf); err is
	// why it could not be gathered (the attempt fails INPUT_RENDER).
	scope scope
	err   error
	// review is set for a loop's review member: its result must be a
	// verdict.
	review bool
	// rendered is set once prompt (engine nodes) or input (binding nodes)
	// hold the node's templates rendered and checked (render.go).
	rendered bool
	prompt   string
	input    json.RawMessage
	// fault is set when rendering found the record at fault (codeFault).
	fault error
	// own is set when the loop runs the attempt itself (runOwn).
	own bool
}

// Execute carries the run on until the graph is complete, failed or
// waiting, records graph:run-finished or graph:run-waiting, and returns
// that result. A run that already finished is returned as recorded, with
// nothing appended. When ctx is cancelled the in-flight attempts are
// cancelled, nothing more is recorded for them, and ctx.Err() is returned:
// the record then shows them started, and the next worker recovers them by
// the crash table.
func (x *Executor) Execute(ctx context.Context) (*runstate.Result, error) {
	if f := x.rs.Finished(); f != nil {
		return f, nil
	}
	// Preflight (preflight.go) decides before anything is dispatched.
	if res, err := x.preflight(ctx); res != nil || err != nil {
		return res, err
	}
	// Nothing is dispatched while a plugin is missing or the record
	// cannot give back what the run needs (fault.go).
	if res, err := x.pauseUnlaunched(ctx); res != nil || err != nil {
		return res, err
	}
	if err := x.checkInputs(ctx); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	x.ctx = ctx
	defer func() {
		cancel()
		close(x.loopEnd)
		x.wg.Wait()
	}()

	var b batch
	starts, err := x.recover(&b)
	if err != nil {
		return nil, err
	}
	more, err := x.decide(&b)
	if err != nil {
		return nil, err
	}
	if err := x.commit(ctx, b); err != nil {
		return nil, err
	}
	x.launch(ctx, append(starts, more...))

	var requests requestPoll
	defer requests.stop()
	for {
		if x.ownErr != nil {
			return nil, x.ownErr
		}
		if x.undecided {
			starts, err := x.decideMore(ctx)
			if err != nil {
				return nil, err
			}
			x.launch(ctx, starts)
			continue
		}
		if x.active == 0 {
			return x.finish(ctx)
		}
		m, ok, err := x.receive(ctx, &requests)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		res, err := x.handleGroup(ctx, x.gather(m))
		if err != nil && !errors.Is(err, errRefused) {
			return nil, err
		}
		x.launch(ctx, res)
	}
}

// receive returns the next message to append: the settle of the attempt
// the loop ran itself (launch), else the first an attempt goroutine hands
// over. ok is false when the loop answered approval requests instead; the
// error is ctx's end or why the run stopped (stop, pluginDied).
func (x *Executor) receive(ctx context.Context, requests *requestPoll) (m message, ok bool, err error) {
	if x.owned {
		m, x.ownSettle, x.owned = x.ownSettle, message{}, false
		return m, true, nil
	}
	select {
	case <-ctx.Done():
		return m, false, ctx.Err()
	case err := <-x.fatal:
		return m, false, err
	case <-requests.tick(x.polling()):
		starts, err := x.answerRequests(ctx)
		if err != nil {
			return m, false, err
		}
		x.launch(ctx, starts)
		return m, false, nil
	case m = <-x.msgs:
		return m, true, nil
	}
}

// polling reports whether the loop looks for approval requests: while a
// position waits for approval.
func (x *Executor) polling() bool {
	return x.o.Requests != nil && x.rs.AwaitingApproval()
}

// recover applies the crash table (docs/architecture.md#the-executor) to every occurrence the
// record shows in flight: not started → run it; started and saved
// retry_safe → node-resumed, run again; started and not retry-safe → pause
// with a reconcile-attempt request, node code is not called.
func (x *Executor) recover(b *batch) ([]start, error) {
	var starts []start
	for _, n := range x.rs.Graph().InFlight() {
		if n.Status == graph.StatusStarted {
			if n.Def.Lane != "" {
				// The engine call the crash cut off: no identity is known.
				if err := x.add(b, graph.EventEngineAttempt, x.rs.InterruptedCall(n)); err != nil {
					return nil, err
				}
			}
			if !n.RetrySafe {
				if err := x.add(b, graph.EventNodePaused, reconcilePause(n.Def.ID, n.Position, x.attemptID(n), crashCause(x.rs.PreviousEnd(), x.rs.RecoveredBefore(n.Position)))); err != nil {
					return nil, err
				}
				continue
			}
			if err := x.add(b, graph.EventNodeResumed, graph.ResumedData{Node: n.Def.ID, Position: n.Position, Reason: graph.ResumedRetrySafe}); err != nil {
				return nil, err
			}
		}
		s, err := x.gate(b, n)
		if err != nil {
			return nil, err
		}
		starts = append(starts, s...)
	}
	return starts, nil
}

func (x *Executor) attemptID(n *graph.NodeState) string {
	return plan.AttemptID(x.plan.Namespace, x.plan.RunID, n.Def.ID, n.Position)
}

// gate applies the action policy to a dispatched position before its
// effects (policyGate: a person's decision, the policies' — wait pauses,
// deny fails DENIED); a position allowed to start records its
// attempt-started and is returned to launch.
func (x *Executor) gate(b *batch, n *graph.NodeState) ([]start, error) {
	st, settled, err := x.policyGate(b, n)
	if err != nil || settled {
		return nil, err
	}
	if failpoint.Enabled && st == nil {
		if err := x.crashPoint(x.ctx, b, failpoint.AfterDispatch, n.Def.ID); err != nil {
			return nil, err
		}
	}
	if st == nil {
		s := x.newStart(n)
		st = &s
	}
	if err := x.add(b, graph.EventAttemptStarted, graph.AttemptStartedData{Node: n.Def.ID, Position: n.Position,
		AttemptID: st.attempt, RetrySafe: n.Def.RetrySafe}); err != nil {
		return nil, err
	}
	return []start{*st}, nil
}

// newStart returns the attempt at n's position with what its templates
// may read; it is rendered later (render.go). A unit whose prompt and
// input hold no template gets no scope: neither results nor loop or each
// variables are gathered (a chain's node would otherwise copy every
// result before it).
func (x *Executor) newStart(n *graph.NodeState) start {
	st := start{node: n.Def, position: n.Position, attempt: x.attemptID(n), seq: x.rs.Sequence(n.Position)}
	if hcl.ReadsResults(n.Def.Prompt, n.Def.Input) {
		st.scope, st.err = x.scopeOf(n)
	}
	if n.Loop != "" {
		st.review = n.Def.ID == x.rs.Graph().Vertex(n.Loop).Def.Loop.Review
	}
	return st
}

// decide asks the graph for its next decision and records it into b:
// the loop and for_each steps the graph takes by itself, the answers to
// what it asks (a dynamic for_each's keys, a condition, a verdict), then
// the dispatch decision with each dispatched position's gate (its policy
// decision, attempt-started, or pause or denial) — asking again after
// each, until nothing is left to record or b is as large as one append
// may grow (dispatch.go; x.undecided is then set). Nothing is dispatched
// once a budget stopped the run (budget.go).
func (x *Executor) decide(b *batch) ([]start, error) {
	var starts []start
	var full batchFill
	x.undecided = false
	for {
		d := x.rs.Graph().Decide()
		switch {
		case len(d.Transitions) > 0:
			for _, t := range d.Transitions {
				if err := x.add(b, t.Type, t.Data); err != nil {
					return nil, err
				}
			}
			continue
		case len(d.Asks) > 0:
			for _, a := range d.Asks {
				if err := x.answer(b, a); err != nil {
					return nil, err
				}
			}
			continue
		}
		// A decision whose positions all settle at their gate (denied, or
		// paused) may make others ready — a retry, the finalizers — so the
		// graph is asked again until it has nothing more to dispatch.
		ds := d.Dispatches
		if len(ds) == 0 {
			return starts, nil
		}
		if x.budgetStop == "" {
			x.budgetStop = x.budget(len(ds))
		}
		if x.budgetStop != "" {
			return starts, nil
		}
		if full.reached(x, *b) {
			// The rest goes into the next batch (Execute).
			x.undecided = true
			return starts, nil
		}
		ds = ds[:x.dispatchFit(ds)]
		if err := x.add(b, graph.EventNodeDispatched, graph.DispatchedData{Dispatches: ds}); err != nil {
			return nil, err
		}
		nodes := make([]*graph.NodeState, len(ds))
		for i, d := range ds {
			nodes[i] = x.rs.Graph().AtPosition(d.Position)
		}
		// The positions' policy questions are asked together, before
		// their gates record the answers in decision order.
		x.askAll(b, nodes)
		for _, n := range nodes {
			s, err := x.gate(b, n)
			if err != nil {
				return nil, err
			}
			starts = append(starts, s...)
		}
	}
}

// finish records the graph's outcome.
func (x *Executor) finish(ctx context.Context) (*runstate.Result, error) {
	g := x.rs.Graph()
	out := g.Decide().Outcome
	if out == nil {
		// Nothing in flight and nothing dispatchable only happens under a
		// budget.
		out = &graph.Outcome{Kind: graph.OutcomeFail, Code: CodeBudget}
	}
	typ := graph.EventRunFinished
	var res *runstate.Result
	switch {
	case x.budgetStop != "" && out.Kind != graph.OutcomePaused:
		res = &runstate.Result{RunID: x.plan.RunID, Kind: runstate.KindFail, Code: CodeBudget, Output: &runstate.Output{}}
		x.budgetOutput(res.Output)
	case out.Kind == graph.OutcomePaused:
		if p := x.rs.Paused(); p != nil {
			// Already recorded; nothing changed since.
			return p, nil
		}
		typ = graph.EventRunWaiting
		res = runstate.OutcomeResult(x.plan.RunID, g, out)
	default:
		res = runstate.OutcomeResult(x.plan.RunID, g, out)
	}
	return x.recordResult(ctx, nil, typ, res)
}
