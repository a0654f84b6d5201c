package executor

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/obversa/obversa/hcl"
	"github.com/obversa/obversa/host/graph"
	"github.com/obversa/obversa/host/runstate"
	"github.com/obversa/obversa/internal/failpoint"
	"github.com/obversa/obversa/plugin"
)

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
