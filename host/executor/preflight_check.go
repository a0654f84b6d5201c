package executor

import (
	"context"
	"errors"
	"fmt"

	"github.com/obversa/obversa/host/runstate"
	"github.com/obversa/obversa/plugin"
)

// preflightPrompt is the prompt of a live probe: a tool-free question any
// model answers cheaply.
const preflightPrompt = "This is a preflight check of the connection. Reply with the single word OK."

// check runs one check; a typed failure is returned with its finish.
func (r *round) check(ctx context.Context, s runstate.ProbeStartedData) (runstate.ProbeFinishedData, *plugin.Failure) {
	switch s.Check {
	case runstate.CheckDigest:
		return r.digest(s.Target), nil
	case runstate.CheckHealth:
		return r.health(ctx, s.Target), nil
	case runstate.CheckStatic:
		return r.static(ctx, s)
	default:
		return r.live(ctx, s)
	}
}

func failedWith(format string, args ...any) runstate.ProbeFinishedData {
	return runstate.ProbeFinishedData{Outcome: runstate.OutcomeFailed, Detail: fmt.Sprintf(format, args...)}
}

// digest checks that the binary the plugin was launched from still has
// the plan's SHA-256.
func (r *round) digest(t plugin.Identity) runstate.ProbeFinishedData {
	pp, ok := r.x.plan.Plugin(t.Adapter)
	if !ok || pp.Type != string(plugin.TypeEngine) {
		return failedWith("%q is not an engine plugin of the plan", t.Adapter)
	}
	probe, ok := r.x.o.Probes[t.Adapter]
	if !ok || probe.Binary == "" {
		return failedWith("%v: engine %q", ErrPluginMissing, t.Adapter)
	}
	sum, err := plugin.FileSHA256(probe.Binary)
	if err != nil {
		return failedWith("hashing %s: %v", probe.Binary, err)
	}
	if sum != pp.SHA256 {
		return failedWith("PLUGIN_CHANGED: %s has sha256 %s, the plan pins %s", probe.Binary, sum, pp.SHA256)
	}
	return runstate.ProbeFinishedData{Outcome: runstate.OutcomePassed, Detail: "sha256 " + sum}
}

// health calls the plugin's grpc.health.v1 Check; a plugin that does not
// answer in time is stopped.
func (r *round) health(ctx context.Context, t plugin.Identity) runstate.ProbeFinishedData {
	probe, ok := r.x.o.Probes[t.Adapter]
	if !ok || probe.Health == nil {
		return failedWith("%v: engine %q", ErrPluginMissing, t.Adapter)
	}
	err := probe.Health(ctx)
	switch {
	case err == nil:
		return runstate.ProbeFinishedData{Outcome: runstate.OutcomePassed, Detail: "SERVING"}
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		fin := failedWith("plugin %q did not answer its health check within %s", t.Adapter, r.timeout)
		if probe.Stop != nil {
			probe.Stop()
			fin.Detail += "; the plugin process was stopped"
		}
		return fin
	default:
		return failedWith("%v", err)
	}
}

// static asks the engine to admit the target without a model call.
func (r *round) static(ctx context.Context, s runstate.ProbeStartedData) (runstate.ProbeFinishedData, *plugin.Failure) {
	t := s.Target
	if r.x.o.Probes[t.Adapter].NoAdmit {
		return runstate.ProbeFinishedData{Outcome: runstate.OutcomeUnsupported, Detail: "the engine's Describe reports no Admit"}, nil
	}
	eng, ok := r.x.o.Engines[t.Adapter]
	if !ok {
		return failedWith("%v: engine %q", ErrPluginMissing, t.Adapter), nil
	}
	resp, err := eng.Admit(ctx, plugin.AdmitRequest{Target: t})
	if err != nil {
		var f *plugin.Failure
		switch {
		case errors.As(err, &f):
			return failedWith("Admit: %v", err), f
		case errors.Is(err, plugin.ErrWrongType):
			return runstate.ProbeFinishedData{Outcome: runstate.OutcomeUnsupported, Detail: "the engine does not implement Admit"}, nil
		case errors.Is(ctx.Err(), context.DeadlineExceeded):
			return failedWith("Admit did not answer within %s", r.timeout), &plugin.Failure{Kind: plugin.FailureTimeout, Message: err.Error()}
		}
		return failedWith("Admit: %v", err), nil
	}
	if !resp.Supported {
		detail := "the engine cannot check this target statically"
		if resp.Reason != "" {
			detail += ": " + resp.Reason
		}
		return runstate.ProbeFinishedData{Outcome: runstate.OutcomeUnsupported, Detail: detail}, nil
	}
	sel := resp.Selection.Or(t) // an engine that does not name a part of the target did not change it
	lane, _ := r.x.plan.Lane(s.Lane)
	if !runstate.LaneAllows(lane.KnownSubstitutions, t, sel) {
		return runstate.ProbeFinishedData{Outcome: runstate.OutcomeDisallowed, Selection: &sel,
			Detail: fmt.Sprintf("Admit selected %s, which the lane neither requests nor lists in known_substitutions", runstate.TargetName(sel))}, nil
	}
	return runstate.ProbeFinishedData{Outcome: runstate.OutcomePassed, Selection: &sel, Detail: "selected " + runstate.TargetName(sel)}, nil
}

// PreflightPosition is the position a live probe's streamed output is
// kept under in stream.jsonl: "preflight/<probe-id>".
func PreflightPosition(probeID string) string { return "preflight/" + probeID }

// live makes one tool-free call with purpose PREFLIGHT and no workspace.
// Its usage is recorded; a failed call's usage is unknown.
func (r *round) live(ctx context.Context, s runstate.ProbeStartedData) (runstate.ProbeFinishedData, *plugin.Failure) {
	eng, ok := r.x.o.Engines[s.Target.Adapter]
	if !ok {
		fin := failedWith("%v: engine %q", ErrPluginMissing, s.Target.Adapter)
		fin.Usage = &plugin.Usage{}
		return fin, nil
	}
	target := s.Target
	target.Tools = []string{}
	streamed := r.x.o.Stream.Call(s.Lane, PreflightPosition(s.ProbeID), 1)
	res, err := eng.Run(ctx, plugin.RunRequest{
		Purpose: plugin.PurposePreflight, RunID: r.x.plan.RunID, AttemptID: s.ProbeID,
		Target: target, Prompt: preflightPrompt, Tools: []string{}, Timeout: r.timeout,
	}, streamed.Emit)
	streamed.End()
	if err != nil {
		fin := failedWith("Run: %v", err)
		fin.Usage = &plugin.Usage{}
		var f *plugin.Failure
		switch {
		case errors.As(err, &f):
			return fin, f
		case errors.Is(ctx.Err(), context.DeadlineExceeded):
			fin.Detail = fmt.Sprintf("the live call did not answer within %s", r.timeout)
			return fin, &plugin.Failure{Kind: plugin.FailureTimeout, Message: err.Error()}
		}
		return fin, nil
	}
	u := res.Usage
	return runstate.ProbeFinishedData{Outcome: runstate.OutcomePassed, Usage: &u, Detail: "answered as " + runstate.TargetName(res.Effective)}, nil
}

// failureKind returns f's kind, unknown when empty.
func failureKind(f *plugin.Failure) plugin.FailureKind {
	if f.Kind == "" {
		return plugin.FailureUnknown
	}
	return f.Kind
}
