package executor

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/obversa/obversa/host/graph"
	"github.com/obversa/obversa/internal/failpoint"
	"github.com/obversa/obversa/plugin"
)

// question is the action policy's decision about one offer of a position,
// taken before it is recorded: the rendered attempt the policies were
// asked about and their decision, or the failure that kept the attempt
// from being rendered (a template that does not render, a known secret).
type question struct {
	start    start
	decision graph.ActionDecidedData
	failed   *graph.FailedData
}

// askAll asks the policy questions of the positions of one decision
// concurrently, so that a slow policy costs one wait per decision, not
// one per position; gate records each answer in decision order.
func (x *Executor) askAll(b *batch, nodes []*graph.NodeState) {
	var asked []*graph.NodeState
	for _, n := range nodes {
		if x.asks(n) && n.Approved == "" && n.Decision == nil {
			asked = append(asked, n)
		}
	}
	if len(asked) < 2 {
		return // one question is asked by its gate
	}
	qs := make([]*question, len(asked))
	var wg sync.WaitGroup
	for i, n := range asked {
		st := x.newStart(n)
		wg.Add(1)
		go func() {
			defer wg.Done()
			qs[i] = x.askPolicies(n, st)
		}()
	}
	wg.Wait()
	if x.questions == nil {
		x.questions = map[string]*question{}
	}
	for i, n := range asked {
		x.questions[n.Position] = qs[i]
	}
}

// asks reports whether the action policy is asked about n's attempts: the
// plan names policies, or the run file's approval list names the node
// (the built-in approval policy, docs/policies.md).
func (x *Executor) asks(n *graph.NodeState) bool {
	return len(x.plan.Policies) > 0 || n.Def.Approval
}

// policyGate applies the action policy to a dispatched position before its
// effects (docs/policies.md). A person's recorded decision stands: deny
// fails the node DENIED, allow lets the attempt start unasked. Otherwise
// the position's recorded policy decision stands for it — or, when there
// is none, the policies are asked now and their decision is recorded:
// wait pauses the position with the reason, deny fails it DENIED. settled
// reports that the position ended at its gate; otherwise the attempt may
// start, and st is its rendered start when the policies were asked now.
func (x *Executor) policyGate(b *batch, n *graph.NodeState) (st *start, settled bool, err error) {
	switch {
	case n.Approved == graph.DecisionDeny:
		return nil, true, x.add(b, graph.EventNodeFailed, graph.FailedData{Node: n.Def.ID, Position: n.Position,
			Code: CodeDenied, Message: "denied by operator"})
	case n.Approved == graph.DecisionAllow || !x.asks(n):
		// A person decided, or there is nothing to ask.
		return nil, false, nil
	}
	d := n.Decision
	if d == nil {
		if failpoint.Enabled {
			if err := x.crashPoint(x.ctx, b, failpoint.AfterDispatch, n.Def.ID); err != nil {
				return nil, false, err
			}
		}
		q := x.questions[n.Position]
		if q == nil {
			q = x.question(n)
		}
		delete(x.questions, n.Position)
		if err := x.ctx.Err(); err != nil {
			// The worker is stopping: what the policies said is not an
			// answer to record (they may have been cut off).
			return nil, false, err
		}
		if q.start.fault != nil {
			// The record cannot give back the position's input: the run
			// stops before the position starts, and pauses (fault.go).
			return nil, false, q.start.fault
		}
		if q.failed != nil {
			return nil, true, x.add(b, graph.EventNodeFailed, *q.failed)
		}
		if err := x.add(b, graph.EventActionDecided, q.decision); err != nil {
			return nil, false, err
		}
		st, d = &q.start, &q.decision
		if failpoint.Enabled && d.Verdict == graph.VerdictAllow {
			// The decision is durable, the attempt not yet started.
			if err := x.crashPoint(x.ctx, b, failpoint.AfterDecision, n.Def.ID); err != nil {
				return nil, false, err
			}
		}
	}
	switch d.Verdict {
	case graph.VerdictWait:
		return nil, true, x.add(b, graph.EventNodePaused, graph.PausedData{Node: n.Def.ID, Position: n.Position,
			Request: graph.PauseRequest{Kind: graph.PauseApproval, Position: n.Position, Reason: d.Reason, Policy: d.Policy}})
	case graph.VerdictDeny:
		return nil, true, x.add(b, graph.EventNodeFailed, graph.FailedData{Node: n.Def.ID, Position: n.Position,
			Code: CodeDenied, Message: denial(d)})
	}
	if st == nil {
		// Allowed by a recorded decision: the attempt renders itself.
		s := x.newStart(n)
		st = &s
	}
	return st, false, nil
}

// denial is the message of a node a policy denied: who, and why.
func denial(d *graph.ActionDecidedData) string {
	if d.Reason == "" {
		return fmt.Sprintf("denied by policy %q", d.Policy)
	}
	return fmt.Sprintf("denied by policy %q: %s", d.Policy, d.Reason)
}

// question asks the policies about n's dispatched position now.
func (x *Executor) question(n *graph.NodeState) *question {
	return x.askPolicies(n, x.newStart(n))
}

// askPolicies renders st and asks the policies about it, in the plan's order
// and then the built-in approval policy for a node the approval list
// names, until one does not allow. It reads only what n and st hold and
// the plan, so several run at once.
func (x *Executor) askPolicies(n *graph.NodeState, st start) *question {
	q := &question{start: st}
	if code, msg := x.render(x.ctx, &q.start); code == codeFault {
		return q
	} else if code != "" {
		q.failed = &graph.FailedData{Node: n.Def.ID, Position: n.Position, Code: code, Message: msg}
		return q
	}
	req := x.decideRequest(n, &q.start)
	d := graph.ActionDecidedData{Node: n.Def.ID, Position: n.Position, Attempt: n.Attempts, Verdict: graph.VerdictAllow, Answers: []graph.PolicyAnswer{}}
	for _, name := range x.plan.Policies {
		a := x.ask(name, req)
		d.Answers = append(d.Answers, a)
		d.Verdict, d.Reason, d.Policy, d.Digest = a.Verdict, a.Reason, a.Policy, a.Digest
		if a.Verdict != graph.VerdictAllow {
			q.decision = d
			return q
		}
	}
	if n.Def.Approval {
		a := graph.PolicyAnswer{Policy: graph.PolicyApproval, Verdict: graph.VerdictWait,
			Reason: "the run file's approval list names this node: it waits for `obversa approve`"}
		d.Answers = append(d.Answers, a)
		d.Verdict, d.Reason, d.Policy, d.Digest = a.Verdict, a.Reason, a.Policy, ""
	}
	q.decision = d
	return q
}

// decideRequest describes the rendered attempt st of n to a policy.
func (x *Executor) decideRequest(n *graph.NodeState, st *start) plugin.DecideRequest {
	req := plugin.DecideRequest{RunID: x.plan.RunID, NodeID: n.Def.ID, Position: n.Position, AttemptID: st.attempt,
		Attempt: n.Attempts, NodeKind: n.Def.Kind, WorkspaceDir: x.plan.Workspace.Root}
	if n.Def.Binding != "" {
		req.Kind, req.Binding, req.Input = plugin.ActionBinding, n.Def.Binding, st.input
		return req
	}
	req.Kind, req.Lane, req.Prompt = plugin.ActionEngine, n.Def.Lane, st.prompt
	if lane, ok := x.plan.Lane(n.Def.Lane); ok {
		if targets := live(lane.Targets(), x.rs.Retired()); len(targets) > 0 {
			req.Target = targets[0]
		}
	}
	return req
}

// ask asks one policy plugin, within the plan's policy timeout. A policy
// that errors, times out, dies, breaks the protocol or was not launched
// gives no answer: the position waits, with why (docs/policies.md: a
// policy that cannot answer never allows).
func (x *Executor) ask(name string, req plugin.DecideRequest) graph.PolicyAnswer {
	a := graph.PolicyAnswer{Policy: name}
	if pp, ok := x.plan.Plugin(name); ok {
		a.Digest = "sha256:" + pp.SHA256
	}
	p, ok := x.o.Policies[name]
	if !ok {
		return noAnswer(a, fmt.Errorf("%w: policy %q", ErrPluginMissing, name))
	}
	ctx, cancel := context.WithTimeout(x.ctx, x.plan.PolicyTimeout())
	defer cancel()
	d, err := p.Decide(ctx, req)
	switch {
	case errors.Is(err, context.DeadlineExceeded) || (err != nil && ctx.Err() != nil && x.ctx.Err() == nil):
		return noAnswer(a, fmt.Errorf("no answer within the policy timeout of %s", x.plan.PolicyTimeout()))
	case err != nil:
		return noAnswer(a, err)
	}
	if err := d.Validate(); err != nil {
		return noAnswer(a, err)
	}
	a.Verdict, a.Reason = string(d.Verdict), d.Reason
	return a
}

// noAnswer is the answer of a policy that gave none: wait, with why.
func noAnswer(a graph.PolicyAnswer, err error) graph.PolicyAnswer {
	a.Verdict, a.Error = graph.VerdictWait, err.Error()
	a.Reason = fmt.Sprintf("policy %q gave no answer (%v); the position waits for a person or a resume, which asks again", a.Policy, err)
	return a
}
