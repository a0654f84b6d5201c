package watchdog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/obversa/obversa/host/executor"
	"github.com/obversa/obversa/host/graph"
	"github.com/obversa/obversa/host/launch"
	"github.com/obversa/obversa/host/plan"
	"github.com/obversa/obversa/internal/proc"
	"github.com/obversa/obversa/store"
)

// EventTakeover records that a watchdog took over a run whose previous
// watchdog is gone, after proving no process of the run survives.
const EventTakeover = "run:takeover"

var (
	// ErrRunNotPaused is returned by Resume when a position is named but
	// the run has no open position to resume. Code RUN_NOT_PAUSED.
	ErrRunNotPaused = errors.New("RUN_NOT_PAUSED")
	// ErrResumePosition is returned by Resume when the named position is
	// not open (not paused, not left in flight). Code RESUME_POSITION.
	ErrResumePosition = errors.New("RESUME_POSITION")
	// ErrAlreadyDecided is returned by Approve when the position already
	// has a recorded decision.
	ErrAlreadyDecided = errors.New("already decided")
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
	// Position names the open position to offer again; empty resumes a
	// run whose watchdog died (a takeover) or re-offers nothing.
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
}

// TakeoverData is the data of run:takeover.
type TakeoverData struct {
	PID     int         `json:"pid"`
	Stopped []proc.Proc `json:"stopped"`
}

// Resume carries a stored run on (DESIGN §5, §6): it takes the run's
// lock (store.ErrProcessLocked while a watchdog or worker holds it), checks
// the preflight state (a probe left open by a crash fails with an error
// wrapping executor.ErrProbeOpen, code PROTOCOL; a preflight pause needs
// its event id in o.Preflight, ErrResumeEventMismatch otherwise), stops
// and verifies gone every process carrying the run's marker (ErrSurvivors
// otherwise), records what the operator said about the named position or
// preflight pause, and supervises workers until the run records a result.
// A run that already finished is returned as recorded, with nothing
// appended (done true).
func Resume(ctx context.Context, runDir string, o ResumeOptions) (res *graph.RunResult, done bool, err error) {
	run, rs, err := openRun(ctx, runDir)
	if err != nil {
		return nil, false, err
	}
	defer run.Close()
	owner, err := run.Lock(ctx)
	if err != nil {
		return nil, false, err
	}
	// Supervise takes the ownership over; every earlier return releases it.
	handed := false
	defer func() {
		if !handed {
			owner.Release()
		}
	}()
	x, err := executor.New(ctx, executor.Options{Run: run, Start: rs})
	if err != nil {
		return nil, false, err
	}
	if f := x.Finished(); f != nil {
		if o.Preflight != "" {
			return nil, false, fmt.Errorf("%w: the run already ended (%s %s); it has no open preflight pause, %s names none", ErrResumeEventMismatch, f.Kind, f.Code, o.Preflight)
		}
		return f, true, nil
	}
	pf, err := preflightEvents(x.PreflightReport(), o, run.Dir())
	if err != nil {
		return nil, false, err
	}
	ev, err := operatorEvents(x.State(), o)
	if err != nil {
		return nil, false, err
	}
	if open := openPositions(x.State()); o.Position == "" && o.Preflight == "" && len(open) > 0 {
		// Paused positions wait for a person's word about each one; a bare
		// resume would only pause again.
		return nil, false, fmt.Errorf("%w: positions %v wait; name one with --position (after `obversa approve` for an approval)", ErrResumePosition, open)
	}
	// A run paused because the workspace was busy never ran a worker
	// there: it has no anchor to check.
	w := x.Waiting()
	if err := checkWorkspace(ctx, run, rs.Plan, w != nil && w.Code != CodeWorkspaceLease); err != nil {
		return nil, false, err
	}
	// The pinned plugin bytes must still be there before anything is
	// recorded: a resume that could only end PLUGIN_CHANGED changes nothing.
	for _, pl := range rs.Plan.Plugins {
		if err := launch.VerifyCached(pl.Name, launch.CachePath(rs.Plan.Storage.Directory, pl.SHA256), pl.SHA256); err != nil {
			return nil, false, fmt.Errorf("%w; nothing was recorded (restore the binary with sha256 %s to the cache, or start a new run)", err, pl.SHA256)
		}
	}
	marked, err := stopMarked(ctx, run.Dir(), rs.Plan.TeardownGraceMS)
	if err != nil {
		return nil, false, err
	}
	var b []store.NewEvent
	b = append(b, store.NewEvent{Type: EventTakeover, Data: TakeoverData{PID: os.Getpid(), Stopped: marked}})
	b = append(b, pf...)
	b = append(b, ev...)
	b = append(b, store.NewEvent{Type: graph.EventRunResumed, Data: map[string]string{"position": o.Position}})
	if _, err := run.Append(ctx, run.Rev(), b...); err != nil {
		return nil, false, err
	}
	handed = true
	so := o.Supervise
	so.Owner = owner
	res, err = Supervise(ctx, run, so)
	return res, false, err
}

// stopMarked stops every process carrying the run's owner marker (TERM,
// grace ms, KILL) and returns them; survivors give ErrSurvivors.
func stopMarked(ctx context.Context, runDir string, grace int64) ([]proc.Proc, error) {
	marked, left := stopRun(ctx, OwnerMarker(runDir), msDuration(grace))
	if len(left) > 0 {
		return nil, fmt.Errorf("%w: %d processes of the run survive (first pid %d)", ErrSurvivors, len(left), left[0].PID)
	}
	return marked, nil
}

// preflightEvents checks the run's preflight state against o (DESIGN §5):
// an open probe refuses the start (PROTOCOL); a preflight pause is resumed
// only by its own event id, recorded as preflight:resumed; an id that is
// not the open pause is RESUME_EVENT_MISMATCH naming both.
func preflightEvents(r executor.PreflightReport, o ResumeOptions, runDir string) ([]store.NewEvent, error) {
	if r.OpenProbe != nil {
		return nil, executor.OpenProbeError(*r.OpenProbe, runDir)
	}
	switch {
	case r.PauseEventID == "" && o.Preflight == "":
		return nil, nil
	case r.PauseEventID == "":
		latest := r.LastPauseEventID
		if latest == "" {
			latest = "none"
		}
		return nil, fmt.Errorf("%w: --preflight %s, but the run waits on no preflight pause (preflight phase %s; latest preflight pause %s)",
			ErrResumeEventMismatch, o.Preflight, r.Phase, latest)
	case o.Preflight == "":
		return nil, fmt.Errorf("%w: no --preflight given, but the run waits on preflight pause %s; carry it on with `obversa resume --preflight %s %s`",
			ErrResumeEventMismatch, r.PauseEventID, r.PauseEventID, runDir)
	case o.Preflight != r.PauseEventID:
		return nil, fmt.Errorf("%w: --preflight %s is not the open preflight pause %s; resume with --preflight %s",
			ErrResumeEventMismatch, o.Preflight, r.PauseEventID, r.PauseEventID)
	case o.Position != "" || o.Reconciled != "":
		return nil, fmt.Errorf("%w: the run waits on preflight pause %s, before any position was dispatched; drop --position and --reconciled",
			ErrResumePosition, r.PauseEventID)
	}
	return []store.NewEvent{{Type: executor.EventPreflightResumed, Data: executor.PreflightResumedData{PreflightEventID: r.PauseEventID}}}, nil
}

// InterruptPreflight closes the preflight probe a crash left open in the
// run at runDir as interrupted and records a preflight pause, in one
// conditional append (DESIGN §5), so that `obversa resume --preflight ID`
// can carry the run on. It runs only while no watchdog or worker holds the
// run: it takes the run's lock (store.ErrProcessLocked otherwise) and stops
// any process still carrying the run's marker (ErrSurvivors when one
// survives). It returns the pause's event id; already is true when an
// earlier interrupt recorded that pause and nothing was appended. Errors:
// executor.ErrNothingToInterrupt when no probe is open, an error wrapping
// store.ErrRevisionConflict when something else was appended first.
func InterruptPreflight(ctx context.Context, runDir string) (id string, already bool, err error) {
	run, rs, err := openRun(ctx, runDir)
	if err != nil {
		return "", false, err
	}
	defer run.Close()
	owner, err := run.Lock(ctx)
	if err != nil {
		return "", false, err
	}
	defer owner.Release()
	x, err := executor.New(ctx, executor.Options{Run: run, Start: rs})
	if err != nil {
		return "", false, err
	}
	if r := x.PreflightReport(); r.OpenProbe != nil {
		if _, err := stopMarked(ctx, run.Dir(), rs.Plan.TeardownGraceMS); err != nil {
			return "", false, err
		}
	}
	return x.InterruptPreflight(ctx)
}

// operatorEvents are the events that offer the named position again.
func operatorEvents(st *graph.State, o ResumeOptions) ([]store.NewEvent, error) {
	open := openPositions(st)
	if o.Position == "" {
		if o.Reconciled != "" {
			return nil, fmt.Errorf("%w: --reconciled needs --position (open: %v)", ErrResumePosition, open)
		}
		return nil, nil
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
		return nil, fmt.Errorf("%w: %s is not paused; open positions: %v", ErrResumePosition, o.Position, open)
	}
	resumed := store.NewEvent{Type: graph.EventNodeResumed, Data: graph.ResumedData{Node: n.Def.ID, Position: n.Position, Reason: "operator"}}
	if n.Pause != nil && n.Pause.Kind == "reconcile-attempt" {
		switch o.Reconciled {
		case "done":
			result := o.Result
			if len(result) == 0 {
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

// Approve records an operator's decision on an approval pause:
// graph:approval-decided{position, decision}. It takes the run's
// ownership first, so it fails with store.ErrProcessLocked while a
// watchdog or worker holds the run. It returns ErrResumePosition when the
// position does not wait for approval.
func Approve(ctx context.Context, runDir, position string, deny bool) error {
	run, err := store.OpenRunDir(ctx, runDir, store.Policy{})
	if err != nil {
		return err
	}
	defer run.Close()
	owner, err := run.Lock(ctx)
	if err != nil {
		return err
	}
	defer owner.Release()
	x, err := executor.New(ctx, executor.Options{Run: run})
	if err != nil {
		return err
	}
	var n *graph.NodeState
	for _, c := range x.State().Nodes() {
		if c.Position == position && c.Status == graph.StatusPaused && c.Pause != nil && c.Pause.Kind == "approval" {
			n = c
		}
	}
	if n == nil {
		return fmt.Errorf("%w: %s does not wait for approval", ErrResumePosition, position)
	}
	if n.Approved != "" {
		return fmt.Errorf("%w: %s was already decided (%s); run `obversa resume --position %s` to act on it", ErrAlreadyDecided, position, n.Approved, position)
	}
	decision := "allow"
	if deny {
		decision = "deny"
	}
	_, err = run.Append(ctx, run.Rev(), store.NewEvent{Type: graph.EventApproval, Data: graph.ApprovalData{Position: position, Decision: decision}})
	return err
}

// checkWorkspace verifies the workspace before a resume: a paused run
// against its runner-pause-anchor (which must exist), a run taken over
// after a crash against the last snapshot, if one was taken.
func checkWorkspace(ctx context.Context, run store.Record, p *plan.Plan, paused bool) error {
	g := newGuard(p, run.Dir())
	if !g.active() {
		return nil
	}
	snap, err := lastAnchor(ctx, run)
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

// openPositions lists the paused positions of a state.
func openPositions(st *graph.State) []string {
	var open []string
	for _, n := range st.Nodes() {
		if n.Status == graph.StatusPaused {
			open = append(open, n.Position)
		}
	}
	return open
}
