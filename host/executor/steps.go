package executor

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/obversa/obversa/hcl"
	"github.com/obversa/obversa/host/graph"
)

// answer records the executor's answer to one of the graph's asks
// (graph.Decision.Asks): a dynamic for_each's keys, a loop's until
// condition, a review's verdict.
func (x *Executor) answer(b *batch, a graph.Ask) error {
	switch a.Kind {
	case graph.AskExpand:
		return x.add(b, graph.EventNodeExpanded, x.expand(a.Vertex))
	case graph.AskCondition:
		return x.add(b, graph.EventLoopCondition, x.condition(a.Vertex, a.Round))
	case graph.AskReview:
		v := x.verdict(a.Unit)
		return x.add(b, graph.EventLoopReviewed, graph.ReviewedData{Loop: a.Vertex.Def.ID, Round: a.Round, Member: a.Unit.Def.ID,
			Position: a.Unit.Position, Outcome: v.Outcome(), Accepted: v.Status == graph.VerdictPass})
	}
	return fmt.Errorf("%w: an ask of kind %d", graph.ErrInvalidEvent, a.Kind)
}

// expand decides a dynamic for_each's instances: the source's items, or
// the failure that keeps the node from having any (docs/run-file.md,
// "for_each").
func (x *Executor) expand(v *graph.VertexState) graph.ExpandedData {
	id, fe := v.Def.ID, v.Def.ForEach
	fail := func(code, msg string) graph.ExpandedData {
		return graph.ExpandedData{Node: id, Keys: []string{}, Code: code, Message: msg}
	}
	items, err := x.renderItems(v)
	switch {
	case errors.Is(err, hcl.ErrForEachItems):
		return fail(graph.CodeForEachInvalid, err.Error())
	case err != nil:
		return fail(graph.CodeInputRender, "for_each: "+err.Error())
	case len(items) > fe.MaxItems:
		return fail(graph.CodeForEachLimit, fmt.Sprintf("for_each has %d items, more than max_items %d; raise max_items or split the items", len(items), fe.MaxItems))
	}
	d := graph.ExpandedData{Node: id, Keys: make([]string, len(items))}
	values := make(map[string]json.RawMessage, len(items))
	for i, it := range items {
		d.Keys[i] = it.Key
		values[it.Key] = it.Value
	}
	if n := len(mustJSON(d)); !x.fitsEvent(n) {
		return fail(graph.CodeForEachLimit, fmt.Sprintf("the %d keys of for_each take %d bytes, more than one event holds (storage.max_event_payload_bytes %d); use shorter keys or raise the limit",
			len(items), n, x.plan.Storage.MaxEventPayloadBytes))
	}
	x.items[id] = values
	return d
}

// condition renders a loop's until for round r against the round's
// results (every member but the review has passed) and the loop's
// upstream.
func (x *Executor) condition(v *graph.VertexState, r int) graph.ConditionData {
	d := graph.ConditionData{Loop: v.Def.ID, Round: r, Which: graph.ConditionUntil}
	s := scope{results: x.upstream(v.Def), loop: x.loopScope(v, r)}
	for _, m := range v.Def.Loop.Members {
		if mv, ok := unitValue(v.Loop.Member(r, m.ID)); ok && m.ID != v.Def.Loop.Review {
			s.results[m.ID] = mv
		}
	}
	sc, err := x.resolve(x.ctx, s)
	if err == nil {
		d.Met, err = sc.Condition(v.Def.Loop.Until)
	}
	switch {
	case err != nil:
		d.Error = err.Error()
	case d.Met:
		d.Reason = "until is true: the review runs"
	default:
		d.Reason = "until is false: the round ends without a review"
	}
	return d
}

// verdict reads the verdict of a round's review member: a binding's
// failure of kind unknown is its verdict; a result is read as the
// member's kind of verdict (Verdict, BindingVerdict). A result that is
// not a verdict — only an operator's reconciliation can record one — is a
// failed review saying so.
func (x *Executor) verdict(n *graph.NodeState) graph.Verdict {
	if n.VerdictFailure {
		return graph.FailureVerdict(n.Def.ID, n.Failure)
	}
	v, _ := unitValue(n)
	raw, err := x.load(x.ctx, n.Def.ID, v)
	var out graph.Verdict
	if err == nil {
		out, err = parseVerdict(n.Def, raw)
	}
	if err != nil {
		return graph.Verdict{Status: graph.VerdictFail, Summary: "the review's result is not a verdict",
			Findings: []graph.Finding{{Reviewer: n.Def.ID, Evidence: err.Error()}}}
	}
	return out
}

// parseVerdict reads a review member's result by its kind: an engine's
// structured verdict, a binding's exit code.
func parseVerdict(d *graph.NodeDef, result []byte) (graph.Verdict, error) {
	if d.Binding != "" {
		return graph.BindingVerdict(d.ID, result)
	}
	return graph.ParseVerdict(result)
}
