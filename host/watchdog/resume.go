package watchdog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/obversa/obversa/host/graph"
	"github.com/obversa/obversa/host/launch"
	"github.com/obversa/obversa/host/plan"
	"github.com/obversa/obversa/host/runstate"
	"github.com/obversa/obversa/internal/proc"
	"github.com/obversa/obversa/internal/runecut"
	"github.com/obversa/obversa/store"
)

var (
	// ErrRunNotPaused is returned by Resume when a position is named but
	// the run has no open position to resume. Code RUN_NOT_PAUSED.
	ErrRunNotPaused = errors.New("RUN_NOT_PAUSED")
	// ErrResumePosition is returned by Resume when the named position is
	// not open (not paused, not left in flight). Code RESUME_POSITION.
	ErrResumePosition = errors.New("RESUME_POSITION")
	// ErrResultNeeded is returned by Resume for --reconciled=done without
	// a result when a downstream node's prompt or input cannot render
	// with a null one. The error names each such node, its field and the
	// reference, and says to pass --result; and for --reconciled=done on a
	// loop's review member whose --result is missing or not a verdict
	// (docs/run-file.md, "Loops"). Code RECONCILE_RESULT_NEEDED.
	ErrResultNeeded = errors.New("RECONCILE_RESULT_NEEDED")
	// ErrAlreadyDecided is returned by Approve when the position already
	// has a recorded decision.
	ErrAlreadyDecided = runstate.ErrAlreadyDecided
	// ErrSurvivors is returned by Resume when processes carrying the run's
	// owner marker still run, so the run cannot be taken over.
	ErrSurvivors = errors.New("TEARDOWN_INCOMPLETE")
	// ErrResumeEventMismatch is returned by Resume when --preflight names
	// an event that is not the run's open preflight pause (a stale id), or
	// when the run waits on a preflight pause and none is named. The error
	// names both ids. Code RESUME_EVENT_MISMATCH.
	ErrResumeEventMismatch = errors.New("RESUME_EVENT_MISMATCH")
)

// ResumeOptions configures Resume.
type ResumeOptions struct {
	// Position names the open position to offer again; empty offers
	// again every paused position whose approval was decided, and takes
	// over a run whose watchdog died.
	Position string
	// Reconciled answers a reconcile-attempt pause: "done" records the
	// node completed with Result (or null), "not-done" runs it again.
	Reconciled string
	// Result is the operator-supplied result for Reconciled "done".
	Result json.RawMessage
	// Preflight is the event id of the open preflight pause to resume
	// (printed by the run as preflight_event_id, or by `obversa preflight
	// interrupt`). A run waiting on a preflight pause needs it.
	Preflight string
	// Supervise configures the watchdog that carries the run on.
	Supervise SuperviseOptions
	// Lock takes the run's ownership; nil is store.Record.Lock. The CLI's
	// --force-takeover passes a forced takeover of a lease a person
	// confirmed is gone.
	Lock func(ctx context.Context, run store.Record) (store.Ownership, error)
}

// Resume carries a stored run on (docs/architecture.md#the-executor, docs/architecture.md#the-watchdog): it takes the run's
// lock (store.ErrProcessLocked while a watchdog or worker holds it), checks
// the preflight state (a probe left open by a crash fails with an error
// wrapping executor.ErrProbeOpen, code PROTOCOL; a preflight pause needs
// its event id in o.Preflight, ErrResumeEventMismatch otherwise), stops
// and verifies gone every process carrying the run's marker (ErrSurvivors
// otherwise), records what the operator said about the named position or
// preflight pause — with no position named, every paused position whose
// approval was decided is offered again — and supervises workers until the
// run records a result.
// A run that already finished is returned as recorded, with nothing
// appended (done true).
func Resume(ctx context.Context, ref Ref, o ResumeOptions) (res *runstate.Result, done bool, err error) {
	run, st, err := openRun(ctx, ref)
	if err != nil {
		return nil, false, err
	}
	defer run.Close()
	lock := o.Lock
	if lock == nil {
		lock = func(ctx context.Context, run store.Record) (store.Ownership, error) { return run.Lock(ctx) }
	}
	owner, err := lock(ctx, run)
	if err != nil {
		return nil, false, lockRefusal(err, ref)
	}
	// Supervise takes the ownership over; every earlier return releases it.
	handed := false
	defer func() {
		if !handed {
			owner.Release()
		}
	}()
	// The decision below is read from the record as it is under the lock:
	// what was folded before the lock was taken may be stale.
	if err := st.CatchUp(ctx, run); err != nil {
		return nil, false, err
	}
	marker, err := ref.Marker(ctx)
	if err != nil {
		return nil, false, err
	}
	if f := st.Finished(); f != nil {
		if err := checkFinished(ctx, run, st, f, ref, marker, o); err != nil {
			return nil, false, err
		}
		return f, true, nil
	}
	b, err := resumeEvents(ctx, run, st, ref, marker, o)
	if err != nil {
		return nil, false, err
	}
	if err := appendFolded(ctx, run, st, b...); err != nil {
		return nil, false, conflictHint(err, ref)
	}
	handed = true
	so := o.Supervise
	so.Owner, so.State = owner, st
	res, err = Supervise(ctx, ref, run, so)
	return res, false, err
}

// checkFinished answers a resume of the run that ended with f: an error
// when o names a preflight pause it cannot have, and otherwise, when its
// watchdog died before it looked for what the last worker left, the look
// now, so the run ends verified or not.
func checkFinished(ctx context.Context, run store.Record, st *runstate.State, f *runstate.Result, ref Ref, marker string, o ResumeOptions) error {
	if o.Preflight != "" {
		ended := string(f.Kind)
		if f.Code != "" {
			ended += " " + f.Code
		}
		return fmt.Errorf("%w: the run already ended (%s); it has no open preflight pause, %s names none", ErrResumeEventMismatch, ended, o.Preflight)
	}
	if st.CleanupVerified() != nil {
		return nil
	}
	marked, left := stopRun(ctx, marker, st.Plan().TeardownGrace())
	if err := appendFolded(ctx, run, st, store.NewEvent{Type: runstate.EventCleanup, Data: runstate.NewCleanup(marked, left)}); err != nil {
		return conflictHint(err, ref)
	}
	return nil
}

// resumeEvents checks that the unfinished run can be carried on (what o
// says, its workspace, its plugin cache), stops every process carrying its
// marker, and returns the batch that takes it over: run:takeover, what the
// operator said about the preflight pause and positions, and
// graph:run-resumed.
func resumeEvents(ctx context.Context, run store.Record, st *runstate.State, ref Ref, marker string, o ResumeOptions) ([]store.NewEvent, error) {
	pf, err := preflightEvents(st.Preflight().Report(), o, ref.Shell())
	if err != nil {
		return nil, err
	}
	ev, err := operatorEvents(st, o, ref.Shell())
	if err != nil {
		return nil, err
	}
	if open := st.PausedPositions(); o.Position == "" && o.Preflight == "" && len(ev) == 0 && len(open) > 0 {
		// Paused positions wait for a person's word about each one; a bare
		// resume would only pause again.
		return nil, fmt.Errorf("%w: positions %v wait for a person: %s", ErrResumePosition, open, answerHints(st, ref.Shell()))
	}
	// A run paused because the workspace was busy never ran a worker
	// there: it has no anchor to check. A run paused because its record
	// was full may have had no room for one: its workspace is checked as
	// after a crash.
	w := st.Paused()
	if err := checkWorkspace(ctx, run, st, marker, w != nil && anchored(w.Code)); err != nil {
		return nil, err
	}
	p := st.Plan()
	if err := fillCache(p); err != nil {
		return nil, err
	}
	marked, err := stopMarked(ctx, marker, p.TeardownGrace())
	if err != nil {
		return nil, err
	}
	var b []store.NewEvent
	b = append(b, store.NewEvent{Type: runstate.EventTakeover, Data: runstate.TakeoverData{PID: os.Getpid(), Stopped: marked}})
	b = append(b, pf...)
	b = append(b, ev...)
	b = append(b, store.NewEvent{Type: graph.EventRunResumed, Data: runstate.RunResumedData{Position: o.Position}})
	return b, nil
}

// fillCache checks that the pinned plugin bytes are in this host's
// plugin cache before anything is recorded: a resume that could only end
// PLUGIN_CHANGED changes nothing. A host taking over a run started
// elsewhere has no cache entry yet; it copies each missing binary from the
// path it was pinned from (PluginPlan.Source), which must hold exactly the
// pinned bytes (launch.CheckSource checks the digest while copying).
func fillCache(p *plan.Plan) error {
	for _, pl := range p.Plugins {
		cached := launch.CachePath(p.Storage.Directory, pl.SHA256)
		if _, err := os.Stat(cached); errors.Is(err, os.ErrNotExist) && pl.Source != "" {
			if _, err := launch.CheckSource(pl.Name, pl.Source, pl.SHA256, nil, p.Storage.Directory); err != nil {
				return fmt.Errorf("plugin %q is not in this host's cache and its pinned path cannot fill it: %w; nothing was recorded (install the binary with sha256 %s at %s)",
					pl.Name, err, pl.SHA256, pl.Source)
			}
		}
		if err := launch.VerifyCached(pl.Name, cached, pl.SHA256); err != nil {
			return fmt.Errorf("%w; nothing was recorded (restore the binary with sha256 %s to the cache, or start a new run)", err, pl.SHA256)
		}
	}
	return nil
}

// conflictHint says what a refused operator append means: the record
// moved after the command read it, which the run lock should have made
// impossible; nothing of the command was recorded.
func conflictHint(err error, ref Ref) error {
	if errors.Is(err, store.ErrRevisionConflict) {
		return fmt.Errorf("%w; the record changed after this command read it, so nothing was recorded: look at `obversa status %s` and try again", err, ref.Shell())
	}
	return err
}

// stopMarked stops every process carrying the run's owner marker (TERM,
// grace ms, KILL) and returns them; survivors give ErrSurvivors.
func stopMarked(ctx context.Context, marker string, grace time.Duration) ([]proc.Proc, error) {
	marked, left := stopRun(ctx, marker, grace)
	if len(left) > 0 {
		return nil, fmt.Errorf("%w: %d processes of the run survive (first pid %d)", ErrSurvivors, len(left), left[0].PID)
	}
	return marked, nil
}

// operatorEvents are the events that offer the named position again, or,
// when none is named, every paused position whose approval is decided.
// run names the run in the hints of its refusals.
func operatorEvents(rs *runstate.State, o ResumeOptions, run string) ([]store.NewEvent, error) {
	st := rs.Graph()
	open := rs.PausedPositions()
	if o.Position == "" {
		if o.Reconciled != "" {
			return nil, fmt.Errorf("%w: --reconciled needs --position (open: %v)", ErrResumePosition, open)
		}
		// A bare resume carries on every position whose approval was
		// decided (`obversa approve --no-resume`, or an approve whose
		// resume was interrupted): the decision is the person's word.
		var ev []store.NewEvent
		for _, n := range st.Nodes() {
			if n.Status == graph.StatusPaused && n.Pause != nil && n.Pause.Kind == graph.PauseApproval && n.Approved != "" {
				ev = append(ev, store.NewEvent{Type: graph.EventNodeResumed, Data: graph.ResumedData{Node: n.Def.ID, Position: n.Position, Reason: graph.ResumedOperator}})
			}
		}
		return ev, nil
	}
	if len(open) == 0 && o.Reconciled != "" {
		// After a pause (stop --pause, Ctrl-C) or a crash, an attempt cut off
		// in flight is only asked about once a plain resume has taken the
		// run over: that resume pauses it for reconciliation when it is not
		// retry-safe (docs/cli.md, "Steering a run").
		return nil, fmt.Errorf("%w: the run has no paused position; %s waits for no reconciliation yet: first carry the run on with a plain `obversa resume RUN` (an attempt cut off in flight that is not retry-safe then pauses for reconciliation), then answer it with --position and --reconciled", ErrRunNotPaused, o.Position)
	}
	if len(open) == 0 {
		return nil, fmt.Errorf("%w: the run has no paused position; %s cannot be resumed", ErrRunNotPaused, o.Position)
	}
	var n *graph.NodeState
	for _, c := range st.Nodes() {
		if c.Position == o.Position && c.Status == graph.StatusPaused {
			n = c
		}
	}
	if n == nil {
		return nil, fmt.Errorf("%w: %s is not paused; open positions: %v", ErrResumePosition, runecut.Bound(o.Position, runecut.EchoBytes), open)
	}
	resumed := store.NewEvent{Type: graph.EventNodeResumed, Data: graph.ResumedData{Node: n.Def.ID, Position: n.Position, Reason: graph.ResumedOperator}}
	if n.Pause != nil && n.Pause.Kind == graph.PauseReconcile {
		switch o.Reconciled {
		case "done":
			if err := verdictNeeded(st.Definition(), n, o.Result, run); err != nil {
				return nil, err
			}
			result := o.Result
			if len(result) == 0 {
				if err := nullResultUsed(st.Definition(), st, n); err != nil {
					return nil, err
				}
				result = json.RawMessage("null")
			}
			return []store.NewEvent{{Type: graph.EventNodeCompleted, Data: graph.CompletedData{Node: n.Def.ID, Position: n.Position, Result: result}}}, nil
		case "not-done":
			return []store.NewEvent{resumed}, nil
		default:
			return nil, fmt.Errorf("%w: %s waits for reconciliation of attempt %s: say what happened with --reconciled=done or --reconciled=not-done",
				ErrResumePosition, n.Position, n.Pause.AttemptID)
		}
	}
	if o.Reconciled != "" {
		return nil, fmt.Errorf("%w: %s waits for %s, not for reconciliation", ErrResumePosition, n.Position, n.Pause.Kind)
	}
	return []store.NewEvent{resumed}, nil
}

// checkWorkspace verifies the workspace before a resume: a paused run
// against its runner-pause-anchor (which must exist), a run taken over
// after a crash against the last snapshot, if one was taken.
func checkWorkspace(ctx context.Context, run store.Record, st *runstate.State, marker string, paused bool) error {
	g := newGuard(st.Plan(), marker)
	if !g.active() {
		return nil
	}
	snap, err := lastAnchor(ctx, run, st)
	switch {
	case errors.Is(err, ErrAnchorMissing) && !paused:
		return nil
	case err != nil:
		return err
	}
	if err := g.verify(ctx, snap); err != nil {
		return fmt.Errorf("%w; restore the workspace, then resume again", err)
	}
	return nil
}

// anchored reports whether a pause of this code always records its
// runner-pause-anchor: all but WORKSPACE_LEASE (no worker ran) and the
// record's own faults (there may have been no room for it).
func anchored(code string) bool {
	switch code {
	case CodeWorkspaceLease, runstate.CodeStorageFull, runstate.CodeRunStorage,
		runstate.CodeArtifactNotFound, runstate.CodeArtifactIntegrity:
		return false
	}
	return true
}
