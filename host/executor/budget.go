package executor

import "github.com/obversa/obversa/host/runstate"

// Budgets a run's limits set (docs/decisions.md, "Usage and budgets"):
// the name a BUDGET_STOP result gives.
const (
	BudgetDispatches   = "max_dispatches"
	BudgetInputTokens  = "max_input_tokens"
	BudgetOutputTokens = "max_output_tokens"
	BudgetUnmeasured   = "stop_on_unmeasured"
)

// budget returns the budget a decision of n dispatches would pass, ""
// when none: max_dispatches counts the recorded dispatches with it; the
// token budgets count the known usage of the recorded engine calls, which
// must not have passed them (more than the limit); stop_on_unmeasured
// stops at the first call that measured no usage. A passed budget stops
// new dispatches; what is in flight settles.
func (x *Executor) budget(n int) string {
	l := x.plan.Limits
	if l.MaxDispatches > 0 && x.rs.Graph().Dispatched()+n > l.MaxDispatches {
		return BudgetDispatches
	}
	t := x.rs.Totals()
	switch {
	case l.MaxInputTokens > 0 && t.Input > l.MaxInputTokens:
		return BudgetInputTokens
	case l.MaxOutputTokens > 0 && t.Output > l.MaxOutputTokens:
		return BudgetOutputTokens
	case l.StopOnUnmeasured && t.UnmeasuredCalls > 0:
		return BudgetUnmeasured
	}
	return ""
}

// budgetOutput fills a BUDGET_STOP output: the budget, its limit and what
// the run used.
func (x *Executor) budgetOutput(out *runstate.Output) {
	l, t := x.plan.Limits, x.rs.Totals()
	out.Budget = x.budgetStop
	switch x.budgetStop {
	case BudgetDispatches:
		out.MaxDispatches, out.Dispatched = l.MaxDispatches, x.rs.Graph().Dispatched()
		out.Limit, out.Used = int64(l.MaxDispatches), int64(out.Dispatched)
	case BudgetInputTokens:
		out.Limit, out.Used = l.MaxInputTokens, t.Input
	case BudgetOutputTokens:
		out.Limit, out.Used = l.MaxOutputTokens, t.Output
	case BudgetUnmeasured:
		out.Used = int64(t.UnmeasuredCalls)
	}
}
