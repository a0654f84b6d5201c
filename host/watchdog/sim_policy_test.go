//go:build failpoints

package watchdog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"sync/atomic"

	"github.com/obversa/obversa/host/executor"
	"github.com/obversa/obversa/host/graph"
	"github.com/obversa/obversa/host/runstate"
	"github.com/obversa/obversa/plugin"
	"github.com/obversa/obversa/store"
)

// Action policies and budgets in the crash simulation: some cases ask an
// in-process policy plugin before every attempt (allow, wait, deny, or an
// error that pauses), some carry a token budget. A policy's answers are
// fixed per node, so a run with kills must end as the run without; a
// budget is read at each decision from what the record holds, which kills
// change (a call cut off is counted unmeasured, a retried one twice), so a
// budgeted case is held to the budget's own invariants instead.

// simPolicyName is the plan's name of the simulated policy.
const simPolicyName = "sim-policy"

// Policy behaviours of a node.
const (
	policyAllow = "allow"
	policyWait  = "wait"
	policyDeny  = "deny"
	policyError = "error" // the policy fails: the position pauses
)

// drawPolicyAndBudget draws the case's policy answers and budgets from a
// stream of its own, so that the graphs and kill schedules of a seed stay
// what they were without them.
func (c *simCase) drawPolicyAndBudget(seed int64) {
	r := rand.New(rand.NewSource(seed*7919 + 17))
	if r.Intn(3) == 0 {
		c.policy = map[string]string{}
		for _, n := range c.def.Nodes {
			v := policyAllow
			switch r.Intn(10) {
			case 0:
				v = policyWait
			case 1:
				v = policyDeny
			case 2:
				v = policyError
			}
			c.policy[n.ID] = v
			if (v == policyWait || v == policyError) && c.decision[n.ID] == "" {
				// The person answers the pause as the case says.
				c.decision[n.ID] = graph.DecisionAllow
				if r.Intn(3) == 0 {
					c.decision[n.ID] = graph.DecisionDeny
				}
			}
		}
	}
	switch r.Intn(8) {
	case 0, 1:
		c.limits.MaxOutputTokens = int64(1 + r.Intn(30))
	case 2:
		c.limits.StopOnUnmeasured = true
	}
}

// budgeted reports whether the case carries a budget.
func (c *simCase) budgeted() bool {
	return c.limits.MaxOutputTokens > 0 || c.limits.StopOnUnmeasured
}

// simPolicy answers as the case says for each node; like the binding, it
// answers nothing once its worker is dead.
type simPolicy struct {
	c    *simCase
	dead *atomic.Bool
}

func (p *simPolicy) Describe(context.Context) (*plugin.Description, error) {
	return &plugin.Description{Name: simPolicyName, Version: "1", Types: []plugin.Type{plugin.TypePolicy}}, nil
}

func (p *simPolicy) Configure(context.Context, json.RawMessage) ([]plugin.Diagnostic, error) {
	return nil, nil
}

func (p *simPolicy) Decide(ctx context.Context, req plugin.DecideRequest) (*plugin.Decision, error) {
	if p.dead.Load() || ctx.Err() != nil {
		return nil, &plugin.Failure{Kind: plugin.FailureAborted, Message: "the worker is gone"}
	}
	switch v := p.c.policy[req.NodeID]; v {
	case policyWait, policyDeny:
		return &plugin.Decision{Verdict: plugin.Verdict(v), Reason: "scripted " + v + " of " + req.NodeID}, nil
	case policyError:
		return nil, errors.New("scripted policy failure for " + req.NodeID)
	}
	return &plugin.Decision{Verdict: plugin.VerdictAllow}, nil
}

// checkBudget holds a budgeted run's record to its budget: no decision
// was dispatched once the known totals had passed a budget, and a
// BUDGET_STOP names a budget the record passed.
func (s *simRun) checkBudget(ctx context.Context, run store.Record, res *runstate.Result) []string {
	l := s.c.limits
	passed := func(t runstate.Totals) string {
		switch {
		case l.MaxOutputTokens > 0 && t.Output > l.MaxOutputTokens:
			return executor.BudgetOutputTokens
		case l.StopOnUnmeasured && t.UnmeasuredCalls > 0:
			return executor.BudgetUnmeasured
		}
		return ""
	}
	var problems []string
	st := runstate.New()
	err := run.Read(ctx, 1, func(e store.Event) error {
		if e.Type == graph.EventNodeDispatched {
			if b := passed(st.Totals()); b != "" {
				problems = append(problems, fmt.Sprintf("rev %d dispatched after %s was passed (%+v)", e.Rev, b, st.Totals()))
			}
		}
		return st.Apply(e)
	})
	if err != nil {
		return append(problems, err.Error())
	}
	if res.Code == executor.CodeBudget {
		if b := passed(st.Totals()); b == "" || res.Output == nil || res.Output.Budget != b {
			problems = append(problems, fmt.Sprintf("BUDGET_STOP naming %+v, but the record's totals %+v pass %q", res.Output, st.Totals(), b))
		}
	}
	return problems
}
