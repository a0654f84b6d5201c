package executor

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/obversa/obversa/hcl"
	"github.com/obversa/obversa/host/graph"
	"github.com/obversa/obversa/host/runstate"
	"github.com/obversa/obversa/internal/failpoint"
	"github.com/obversa/obversa/plugin"
	"github.com/obversa/obversa/store"
)

var (
	// ErrProbeOpen is returned (wrapped, naming the probe and what to do)
	// when the record shows a preflight probe a crash left open: its
	// outcome is unknown, so nothing starts until an operator closes it
	// with `obversa preflight interrupt` (docs/architecture.md#the-executor). Code PROTOCOL.
	ErrProbeOpen = errors.New(runstate.CodeProtocol)
	// ErrNothingToInterrupt is returned by InterruptPreflight when no
	// probe is open and the open preflight pause (if any) was not recorded
	// by an interrupt.
	ErrNothingToInterrupt = errors.New("no preflight probe is open")
)

// preflightPrompt is the prompt of a live probe: a tool-free question any
// model answers cheaply.
const preflightPrompt = "This is a preflight check of the connection. Reply with the single word OK."

// PluginProbe is what preflight checks of one launched engine plugin.
type PluginProbe struct {
	// Binary is the path the plugin was launched from (its copy in the
	// plugin cache); its SHA-256 must equal the plan's pin.
	Binary string
	// Health calls grpc.health.v1 Check("plugin") under ctx's deadline;
	// it returns nil only for SERVING.
	Health func(ctx context.Context) error
	// NoAdmit is set when the plugin's Describe reports no Admit
	// capability: the static check is then unsupported without a call.
	NoAdmit bool
	// Stop ends the plugin process. Preflight calls it for a plugin whose
	// health check did not answer within the timeout; nil stops nothing.
	Stop func()
}

// SetProbes gives the executor the preflight view of the launched engine
// plugins, by plugin name (the adapter of the lane targets they serve).
func (x *Executor) SetProbes(p map[string]PluginProbe) { x.o.Probes = p }

// preflight runs the preflight phase (docs/architecture.md#the-executor "Preflight") when the
// plan has a policy and the record has not admitted the run yet. It
// returns nil, nil when dispatch may go on; otherwise the result it
// recorded (graph:run-waiting PREFLIGHT_PAUSED or PROTOCOL,
// graph:run-finished PREFLIGHT_FAILED). When ctx ends during a probe it
// returns ctx.Err() with the probe left open in the record.
func (x *Executor) preflight(ctx context.Context) (*runstate.Result, error) {
	f := x.rs.Preflight()
	switch {
	case x.plan.Preflight == nil, f.Admitted() != nil:
		return nil, nil
	case f.Failed() != nil:
		// preflight:failed and its graph:run-finished share one append.
		return nil, fmt.Errorf("%w: preflight:failed without graph:run-finished", graph.ErrInvalidEvent)
	}
	if open := f.Open(); len(open) > 0 {
		return x.refuseOpenProbe(ctx, open[0])
	}
	if id, _ := f.OpenPause(); id != "" && x.rs.Paused() != nil {
		// Paused and not resumed: only `obversa resume --preflight` goes on.
		return x.rs.Paused(), nil
	}
	r := &round{x: x, timeout: x.plan.PreflightTimeout(), lanes: map[string]runstate.AdmittedLane{}}
	return r.run(ctx)
}

// OpenProbeError returns the PROTOCOL error for probe p, left open by a
// crash in the run at runDir: it names the probe and what to do.
func OpenProbeError(p runstate.ProbeStartedData, runDir string) error {
	return fmt.Errorf("%w: preflight probe %s (%s check of lane %q, target %s) was left open by a crash, so its outcome is unknown; "+
		"close it with `obversa preflight interrupt %s` (it records a preflight pause and prints its event id), "+
		"then carry on with `obversa resume --preflight EVENT_ID %s`",
		ErrProbeOpen, p.ProbeID, p.Check, p.Lane, runstate.TargetName(p.Target), runDir, runDir)
}

// refuseOpenProbe records that the start was refused: a graph:run-waiting
// {kind "fail", code PROTOCOL} that stops the watchdog from restarting the
// worker while leaving the run resumable once the probe is closed.
func (x *Executor) refuseOpenProbe(ctx context.Context, p runstate.ProbeStartedData) (*runstate.Result, error) {
	if w := x.rs.Paused(); w != nil && w.Code == runstate.CodeProtocol {
		return w, nil
	}
	target := p.Target
	res := &runstate.Result{RunID: x.plan.RunID, Kind: runstate.KindFail, Code: runstate.CodeProtocol, Output: &runstate.Output{
		Message: OpenProbeError(p, x.o.Run.Dir()).Error(), ProbeID: p.ProbeID, Lane: p.Lane, Check: p.Check, Target: &target,
	}}
	return x.recordResult(ctx, nil, graph.EventRunWaiting, res)
}

// recordResult appends b with the run's result of type typ
// (graph:run-finished or graph:run-waiting) in one write, and returns the
// result as folded. A result whose output would not fit in an event
// records it compacted (Result.Compact: the graph members stay in the
// record they came from). Should the record's policy refuse a result
// recorded alone (b empty), it is recorded compacted and without what it
// may have been refused for, so that the end of a run whose work is done
// is always recorded (docs/decisions.md, "The run output").
func (x *Executor) recordResult(ctx context.Context, b batch, typ string, res *runstate.Result) (*runstate.Result, error) {
	if res.Usage == nil {
		res.Usage = x.rs.RunUsage()
	}
	alone := len(b) == 0
	if !x.fitsEvent(len(mustJSON(res))) {
		res = res.Compact()
	}
	if err := x.add(&b, typ, res); err != nil {
		return nil, err
	}
	err := x.commit(ctx, b)
	if alone && (errors.Is(err, store.ErrKnownSecret) || errors.Is(err, store.ErrStorageLimitExceeded)) {
		if err := x.refold(ctx); err != nil {
			return nil, err
		}
		kept := &runstate.Result{RunID: res.RunID, Kind: res.Kind, Code: res.Code, Usage: res.Usage, Output: &runstate.Output{FromRecord: true,
			Message: fmt.Sprintf("the record refused the result's output (%s); the graph's part of it is restored from the record", store.Code(err))}}
		b = nil
		if err := x.add(&b, typ, kept); err != nil {
			return nil, err
		}
		err = x.commit(ctx, b)
	}
	if err != nil {
		return nil, err
	}
	return x.rs.Result(), nil
}

// InterruptPreflight closes every probe a crash left open as interrupted
// and records a preflight pause (preflight:paused with reason
// "interrupted" and graph:run-waiting PREFLIGHT_PAUSED) in one conditional
// append at the revision the executor folded, so it fails with an error
// wrapping store.ErrRevisionConflict when anything was appended since. It
// returns the pause's event id. When no probe is open and the open pause
// is one an interrupt recorded, it returns that pause's id with already
// true and appends nothing; otherwise ErrNothingToInterrupt. The caller
// must hold the run's lock (no worker may run).
func (x *Executor) InterruptPreflight(ctx context.Context) (id string, already bool, err error) {
	f := x.rs.Preflight()
	open := f.Open()
	if len(open) == 0 {
		if id, reason := f.OpenPause(); id != "" && reason == runstate.ReasonInterrupted {
			return id, true, nil
		}
		return "", false, fmt.Errorf("%w (preflight phase %s)", ErrNothingToInterrupt, f.Report().Phase)
	}
	var b batch
	for _, p := range open {
		fin := runstate.ProbeFinishedData{ProbeID: p.ProbeID, Outcome: runstate.OutcomeInterrupted,
			Detail: "closed by `obversa preflight interrupt`: the probe's outcome is unknown"}
		if p.Check == runstate.CheckLive {
			fin.Usage = &plugin.Usage{}
		}
		if err := x.add(&b, runstate.EventProbeFinished, fin); err != nil {
			return "", false, err
		}
	}
	p := open[0]
	reason := fmt.Sprintf("probe %s (%s check of lane %q, target %s) was interrupted by a crash", p.ProbeID, p.Check, p.Lane, runstate.TargetName(p.Target))
	id, _, err = x.pausePreflight(ctx, b, runstate.PreflightPausedData{Reason: runstate.ReasonInterrupted, ProbeID: p.ProbeID, Lane: p.Lane, Check: p.Check}, reason)
	return id, false, err
}

// pausePreflight appends b with preflight:paused (event id
// preflight-pause-<n>) and graph:run-waiting{kind "pause", code
// PREFLIGHT_PAUSED, output {preflight_event_id, message}}, and returns the
// pause's event id and the result.
func (x *Executor) pausePreflight(ctx context.Context, b batch, d runstate.PreflightPausedData, message string) (string, *runstate.Result, error) {
	id := x.rs.Preflight().NextPauseID()
	if err := x.add(&b, runstate.EventPreflightPaused, d); err != nil {
		return "", nil, err
	}
	b[len(b)-1].ID = id
	res := &runstate.Result{RunID: x.plan.RunID, Kind: runstate.KindPaused, Code: runstate.CodePreflightPaused,
		Output: &runstate.Output{PreflightEventID: id, Message: message}}
	if _, err := x.recordResult(ctx, b, graph.EventRunWaiting, res); err != nil {
		return "", nil, err
	}
	return id, res, nil
}

// round is one pass of the preflight checks over every lane.
type round struct {
	x       *Executor
	b       batch // folded, waiting for the next append
	timeout time.Duration
	lanes   map[string]runstate.AdmittedLane
	blocked []runstate.BlockedTarget
}

// verdict is what one lane target's checks decided.
type verdict int

const (
	verdictAdmit verdict = iota // the lane starts with this target
	verdictSkip                 // retired or blocked: try the lane's next target
	verdictPause                // not lane-dead: pause the run
)

type targetResult struct {
	verdict verdict
	lane    runstate.AdmittedLane
	reason  string
	probe   runstate.ProbeStartedData // the probe that paused the run
}

// run checks every lane in order: for each target not yet retired, the
// binary digest, health, the static check and, where the lane requires
// it, one live call. The first target that passes admits the lane. A
// lane-dead failure retires the target (graph:model-unavailable, the rules
// of Retire) and moves on; a blocked target moves on; any other failure
// pauses the run; a lane left without a target fails it.
func (r *round) run(ctx context.Context) (*runstate.Result, error) {
	x := r.x
	for _, pol := range x.plan.Preflight.Lanes {
		lane, ok := x.plan.Lane(pol.Lane)
		if !ok {
			return r.fail(ctx, pol.Lane, []string{"the lane is not in the plan"})
		}
		var notes []string
		admitted := false
		seen := map[string]bool{}
	targets:
		for _, t := range lane.Targets() {
			key := runstate.TargetKey(pol.Lane, t)
			if seen[key] {
				continue
			}
			seen[key] = true
			if len(live([]plugin.Identity{t}, x.rs.Retired())) == 0 {
				notes = append(notes, runstate.TargetName(t)+" is retired")
				continue
			}
			res, err := r.target(ctx, pol.Lane, pol.Live, pol.UnsupportedStatic, t)
			if err != nil {
				return nil, err
			}
			switch res.verdict {
			case verdictAdmit:
				r.lanes[pol.Lane] = res.lane
				admitted = true
				break targets
			case verdictSkip:
				notes = append(notes, res.reason)
			case verdictPause:
				d := runstate.PreflightPausedData{Reason: res.reason, ProbeID: res.probe.ProbeID, Lane: pol.Lane, Check: res.probe.Check}
				msg := fmt.Sprintf("lane %q target %s: %s check failed: %s", pol.Lane, runstate.TargetName(t), res.probe.Check, res.reason)
				_, res, err := x.pausePreflight(ctx, r.b, d, msg)
				return res, err
			}
		}
		if !admitted {
			return r.fail(ctx, pol.Lane, notes)
		}
	}
	if err := x.add(&r.b, runstate.EventPreflightAdmitted, runstate.PreflightAdmittedData{Lanes: r.lanes, Blocked: r.blocked}); err != nil {
		return nil, err
	}
	return nil, x.commit(ctx, r.b)
}

// fail records preflight:failed and graph:run-finished PREFLIGHT_FAILED.
func (r *round) fail(ctx context.Context, lane string, notes []string) (*runstate.Result, error) {
	msg := fmt.Sprintf("lane %q has no admissible target", lane)
	if len(notes) > 0 {
		msg += ": " + strings.Join(notes, "; ")
	}
	if err := r.x.add(&r.b, runstate.EventPreflightFailed, runstate.PreflightFailedData{Lanes: []string{lane}, Message: msg}); err != nil {
		return nil, err
	}
	res := &runstate.Result{RunID: r.x.plan.RunID, Kind: runstate.KindFail, Code: runstate.CodePreflightFailed,
		Output: &runstate.Output{Message: msg, Lanes: []string{lane}}}
	return r.x.recordResult(ctx, r.b, graph.EventRunFinished, res)
}

// target runs the checks of one lane target in order.
func (r *round) target(ctx context.Context, lane, livePolicy, unsupported string, t plugin.Identity) (targetResult, error) {
	for _, check := range []string{runstate.CheckDigest, runstate.CheckHealth} {
		p, fin, _, err := r.probe(ctx, lane, t, check)
		if err != nil {
			return targetResult{}, err
		}
		if fin.Outcome != runstate.OutcomePassed {
			return targetResult{verdict: verdictPause, reason: fin.Detail, probe: p}, nil
		}
	}
	p, fin, f, err := r.probe(ctx, lane, t, runstate.CheckStatic)
	if err != nil {
		return targetResult{}, err
	}
	al := runstate.AdmittedLane{Target: t, Static: runstate.OutcomePassed}
	switch fin.Outcome {
	case runstate.OutcomePassed:
	case runstate.OutcomeUnsupported:
		if unsupported != hcl.UnsupportedStaticAllow {
			return r.block(lane, t, fin.Detail+` (unsupported_static = "block")`), nil
		}
		al.Static = runstate.OutcomeUnsupported
	case runstate.OutcomeDisallowed:
		return r.block(lane, t, fin.Detail), nil
	default:
		return r.failed(p, fin, f)
	}
	if livePolicy != hcl.LiveRequired {
		return targetResult{verdict: verdictAdmit, lane: al}, nil
	}
	if id, ok := r.x.rs.Preflight().ReceiptFor(lane, t); ok {
		al.LiveProbe, al.LiveReused = id, true
		return targetResult{verdict: verdictAdmit, lane: al}, nil
	}
	p, fin, f, err = r.probe(ctx, lane, t, runstate.CheckLive)
	if err != nil {
		return targetResult{}, err
	}
	if fin.Outcome != runstate.OutcomePassed {
		return r.failed(p, fin, f)
	}
	al.LiveProbe = p.ProbeID
	return targetResult{verdict: verdictAdmit, lane: al}, nil
}

// failed routes a failed static or live probe: a lane-dead typed failure
// retires what it proves (recorded before the next probe starts) and the
// lane moves on; anything else pauses the run.
func (r *round) failed(p runstate.ProbeStartedData, fin runstate.ProbeFinishedData, f *plugin.Failure) (targetResult, error) {
	if f != nil {
		if retire := Retire(p.Target, f); len(retire) > 0 {
			err := r.x.add(&r.b, graph.EventModelUnavailable, graph.ModelUnavailableData{FailureKind: fin.FailureKind, Retired: retire})
			return targetResult{verdict: verdictSkip, reason: fmt.Sprintf("%s retired by its %s check: %s", runstate.TargetName(p.Target), p.Check, fin.Detail)}, err
		}
	}
	return targetResult{verdict: verdictPause, reason: fin.Detail, probe: p}, nil
}

// block withholds a target from the run and moves the lane on.
func (r *round) block(lane string, t plugin.Identity, reason string) targetResult {
	r.blocked = append(r.blocked, runstate.BlockedTarget{Lane: lane, Target: t, Reason: reason})
	return targetResult{verdict: verdictSkip, reason: runstate.TargetName(t) + " is blocked: " + reason}
}

// probe records preflight:probe-started durably, runs the check under the
// preflight timeout, and folds preflight:probe-finished into the pending
// batch (it is appended with whatever comes next). When ctx ends during the
// check nothing more is recorded and ctx.Err() is returned.
func (r *round) probe(ctx context.Context, lane string, t plugin.Identity, check string) (runstate.ProbeStartedData, runstate.ProbeFinishedData, *plugin.Failure, error) {
	x := r.x
	s := runstate.ProbeStartedData{Lane: lane, Target: t, Check: check, ProbeID: x.rs.Preflight().NextProbeID()}
	if err := x.add(&r.b, runstate.EventProbeStarted, s); err != nil {
		return s, runstate.ProbeFinishedData{}, nil, err
	}
	if err := x.commit(ctx, r.b); err != nil {
		return s, runstate.ProbeFinishedData{}, nil, err
	}
	r.b = nil
	if failpoint.Enabled {
		failpoint.Hit(ctx, failpoint.InProbe, lane+"/"+check)
	}
	pctx, cancel := context.WithTimeout(ctx, r.timeout)
	fin, f := r.check(pctx, s)
	cancel()
	if err := ctx.Err(); err != nil {
		return s, runstate.ProbeFinishedData{}, nil, err
	}
	fin.ProbeID = s.ProbeID
	if f != nil {
		fin.FailureKind = string(failureKind(f))
	}
	err := x.add(&r.b, runstate.EventProbeFinished, fin)
	return s, fin, f, err
}

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
	if !laneAllows(lane.KnownSubstitutions, t, sel) {
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

// laneAllows reports whether a selection is the target itself or one of
// the lane's known substitutions (the adapter is the engine's own business
// and is not compared).
func laneAllows(substitutions []plugin.Identity, t, sel plugin.Identity) bool {
	same := func(a, b plugin.Identity) bool {
		a.Adapter, b.Adapter = "", ""
		return runstate.SameIdentity(a, b)
	}
	if same(sel, t) {
		return true
	}
	for _, s := range substitutions {
		if same(sel, s) {
			return true
		}
	}
	return false
}
