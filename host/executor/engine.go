package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/obversa/obversa/host/graph"
	"github.com/obversa/obversa/internal/canonjson"
	"github.com/obversa/obversa/internal/failpoint"
	"github.com/obversa/obversa/plugin"
	"github.com/obversa/obversa/store"
)

// Retire returns what a lane-dead failure of target t proves dead
// (docs/architecture.md#the-executor): auth → adapter+provider; model_unavailable, billing, quota →
// provider+model, plus the reported provider+model when it differs;
// missing_cli, invalid_config → adapter. Other kinds (rate_limit,
// transient, timeout, aborted, unknown) retire nothing and return nil.
func Retire(t plugin.Identity, f *plugin.Failure) []graph.RetiredTarget {
	switch f.Kind {
	case plugin.FailureAuth:
		return []graph.RetiredTarget{{Adapter: t.Adapter, Provider: t.Provider}}
	case plugin.FailureModelUnavailable, plugin.FailureBilling, plugin.FailureQuota:
		out := []graph.RetiredTarget{{Provider: t.Provider, Model: t.Model}}
		if (f.Provider != "" || f.Model != "") && (f.Provider != t.Provider || f.Model != t.Model) {
			out = append(out, graph.RetiredTarget{Provider: f.Provider, Model: f.Model})
		}
		return out
	case plugin.FailureMissingCLI, plugin.FailureInvalidConfig:
		return []graph.RetiredTarget{{Adapter: t.Adapter}}
	}
	return nil
}

// retiredMatch reports whether r covers target t: every non-empty field
// of r equals t's.
func retiredMatch(r graph.RetiredTarget, t plugin.Identity) bool {
	return (r.Adapter == "" || r.Adapter == t.Adapter) &&
		(r.Provider == "" || r.Provider == t.Provider) &&
		(r.Model == "" || r.Model == t.Model)
}

// live returns the lane targets no retirement covers, in order.
func live(targets []plugin.Identity, retired []graph.RetiredTarget) []plugin.Identity {
	var out []plugin.Identity
	for _, t := range targets {
		dead := false
		for _, r := range retired {
			if retiredMatch(r, t) {
				dead = true
				break
			}
		}
		if !dead {
			out = append(out, t)
		}
	}
	return out
}

// engine runs an engine node: the lane's first live target, then at most
// one live fallback sharing the attempt's deadline. Each call is recorded
// (graph:engine-attempt-recorded) and, when it proves a target dead, the
// retirement (graph:model-unavailable) is durable before the fallback.
func (x *Executor) engine(ctx context.Context, s start) []event {
	lane, ok := x.plan.Lane(s.node.Lane)
	if !ok {
		return x.failed(s, CodeNodeFailed, "", fmt.Sprintf("lane %q is not in the plan", s.node.Lane))
	}
	targets := live(lane.Targets(), x.rs.Retired())
	if len(targets) > 2 {
		targets = targets[:2]
	}
	if len(targets) == 0 {
		return x.failed(s, CodeEngineUnavailable, "", fmt.Sprintf("every target of lane %q is retired", lane.Name))
	}
	var schema json.RawMessage
	if s.review {
		schema = graph.VerdictSchema // a reviewer answers with a verdict
	}
	seq := s.seq
	for _, t := range targets {
		if t.Provider == "" {
			return x.failed(s, CodeIdentity, "", fmt.Sprintf("lane %q target adapter %q has no provider: name one in the lane", lane.Name, t.Adapter))
		}
		eng, ok := x.o.Engines[t.Adapter]
		if !ok {
			return x.failed(s, CodeNodeFailed, "", fmt.Sprintf("%v: engine %q", ErrPluginMissing, t.Adapter))
		}
		seq++
		mark := x.oomMark(t.Adapter)
		res, err := x.callEngine(ctx, s, eng, t, seq, schema)
		rec := graph.EngineAttemptData{Node: s.node.ID, Position: s.position, Sequence: seq,
			Requested: identityJSON(t), Effective: json.RawMessage("null")}
		if err == nil {
			return x.engineCompleted(ctx, s, rec, res)
		}
		if evs, fallback := x.engineFailed(ctx, s, t, mark, rec, err); !fallback {
			return evs
		}
	}
	return x.failed(s, CodeEngineUnavailable, "", fmt.Sprintf("every target of lane %q failed lane-dead", lane.Name))
}

// callEngine makes the seq-th engine call of the attempt s to target t,
// streaming its events to the run's live stream.
func (x *Executor) callEngine(ctx context.Context, s start, eng plugin.Engine, t plugin.Identity, seq int, schema json.RawMessage) (*plugin.RunResult, error) {
	if failpoint.Enabled {
		failpoint.Hit(ctx, failpoint.BeforePlugin, s.node.ID)
	}
	streamed := x.o.Stream.Call(s.node.ID, s.position, seq)
	res, err := eng.Run(ctx, plugin.RunRequest{
		Purpose: plugin.PurposeOrdinary, RunID: x.plan.RunID, NodeID: s.node.ID, Position: s.position,
		AttemptID: s.attempt, Target: t, Prompt: s.prompt, Tools: t.Tools, OutputSchema: schema,
		WorkspaceDir: x.plan.Workspace.Root, Timeout: remaining(ctx),
	}, streamed.Emit)
	streamed.End()
	if failpoint.Enabled {
		failpoint.Hit(ctx, failpoint.AfterPlugin, s.node.ID)
	}
	return res, err
}

// engineCompleted records a call that returned res: its parts are kept,
// and its final part completes the node. nil means the executor stopped.
func (x *Executor) engineCompleted(ctx context.Context, s start, rec graph.EngineAttemptData, res *plugin.RunResult) []event {
	rec.Outcome, rec.Effective, rec.Usage = "completed", identityJSON(res.Effective), usageJSON(res.Usage)
	err := x.keepParts(ctx, &rec, partsJSON(res.Parts))
	if isFault(err) {
		x.stop(err)
		return nil
	}
	if err != nil {
		code := store.Code(err)
		if errors.Is(err, store.ErrStorageLimitExceeded) {
			code = CodeResultTooLarge
		}
		// The call and its usage are kept; its parts are not.
		rec.Refused = code
		e := newEvent(graph.EventEngineAttempt, rec)
		return append([]event{e}, x.failed(s, code, "", "keeping the engine result: "+err.Error())...)
	}
	e := newEvent(graph.EventEngineAttempt, rec)
	final, ok := res.Final()
	if !ok {
		return append([]event{e}, x.failed(s, CodeNodeFailed, string(plugin.FailureUnknown), "engine result has no final part")...)
	}
	value := final.JSON
	if final.Kind != plugin.PartStructured {
		value = canonjson.AppendString(make([]byte, 0, len(final.Text)+8), final.Text)
	}
	done := x.completed(ctx, s, value)
	if done == nil {
		return nil
	}
	return append([]event{e}, done...)
}

// engineFailed records a call to target t that failed with err (rec is
// its record so far; mark the oomMark taken before it) with the node's
// failure; with a pause instead when
// the host cut the call off and the node is not retry_safe (uncertain.go).
// When the failure proves t dead, the retirement is made durable and
// fallback says to try the next target. nil evs without fallback: the
// executor stopped, or the plugin died and the next worker carries the
// attempt on by the crash table.
func (x *Executor) engineFailed(ctx context.Context, s start, t plugin.Identity, mark uint64, rec graph.EngineAttemptData, err error) (evs []event, fallback bool) {
	oom := x.outOfMemory(t.Adapter, mark, err)
	if oom == "" && x.pluginDied(s, err) {
		return nil, false
	}
	code, kind := classify(ctx, err)
	rec.Outcome, rec.FailureKind, rec.Message, rec.Usage = "failed", kind, err.Error(), usageJSON(plugin.Usage{})
	if oom != "" {
		rec.FailureKind, rec.Message = string(plugin.FailureUnknown), oom
	}
	e := newEvent(graph.EventEngineAttempt, rec)
	if paused := x.uncertain(s, cutOff(ctx, s, err, oom)); paused != nil {
		return append([]event{e}, paused...), false
	}
	if oom != "" {
		return append([]event{e}, x.failed(s, CodeOutOfMemory, "", oom)...), false
	}
	var f *plugin.Failure
	var retire []graph.RetiredTarget
	if errors.As(err, &f) && ctx.Err() == nil {
		retire = Retire(t, f)
	}
	if len(retire) == 0 {
		return append([]event{e}, x.failed(s, code, kind, err.Error())...), false
	}
	mu := newEvent(graph.EventModelUnavailable, graph.ModelUnavailableData{Node: s.node.ID, Position: s.position, FailureKind: kind, Retired: retire})
	// Durable before any fallback is tried.
	if err := x.send(ctx, s, []event{e, mu}); err != nil {
		if !errors.Is(err, errRefused) {
			return x.failed(s, CodeNodeFailed, kind, "recording the engine attempt: "+err.Error()), false
		}
		// The node fails as one whose result the record refused
		// (refuseResult): with the record's code, and the call and its
		// usage kept without what the record refused.
		code := refusedCode(err)
		var kept []event
		for _, c := range refusedCalls([]event{e}, code) {
			kept = append(kept, newEvent(graph.EventEngineAttempt, c))
		}
		return append(kept, x.failed(s, code, kind, "the record refused the engine attempt: "+store.Problem(err))...), false
	}
	return nil, true
}

// keepParts puts the result parts in the record: inline when they fit an
// event, else as an artifact referenced by parts_artifact.
func (x *Executor) keepParts(ctx context.Context, rec *graph.EngineAttemptData, parts json.RawMessage) error {
	if x.fitsEvent(len(parts)) {
		rec.Parts = parts
		return nil
	}
	ref, err := x.o.Run.PutArtifact(ctx, parts, "application/json", "engine-parts")
	if err != nil {
		return err
	}
	r := graph.ArtifactRef(ref)
	rec.PartsArtifact = &r
	return nil
}

func mustJSON(v any) json.RawMessage {
	b, err := marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
