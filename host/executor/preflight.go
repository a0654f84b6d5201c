package executor

import (
	"context"
	"errors"
	"fmt"

	"github.com/obversa/obversa/host/graph"
	"github.com/obversa/obversa/host/runstate"
	"github.com/obversa/obversa/internal/shellquote"
	"github.com/obversa/obversa/plugin"
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
// crash in the run named run (as a shell command names it: Ref.Shell of
// host/watchdog): it names the probe and what to do.
func OpenProbeError(p runstate.ProbeStartedData, run string) error {
	return fmt.Errorf("%w: preflight probe %s (%s check of lane %q, target %s) was left open by a crash, so its outcome is unknown; "+
		"close it with `obversa preflight interrupt %s` (it records a preflight pause and prints its event id), "+
		"then carry on with `obversa resume --preflight EVENT_ID %s`",
		ErrProbeOpen, p.ProbeID, p.Check, p.Lane, runstate.TargetName(p.Target), run, run)
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
		Message: OpenProbeError(p, shellquote.Quote(x.o.Run.Dir())).Error(), ProbeID: p.ProbeID, Lane: p.Lane, Check: p.Check, Target: &target,
	}}
	return x.recordResult(ctx, nil, graph.EventRunWaiting, res)
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
