package watchdog

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sort"
	"time"

	"github.com/obversa/obversa/host/graph"
	"github.com/obversa/obversa/host/launch"
	"github.com/obversa/obversa/host/runstate"
	"github.com/obversa/obversa/host/runview"
	"github.com/obversa/obversa/internal/proc"
	"github.com/obversa/obversa/plugin"
	"github.com/obversa/obversa/plugin/confine"
	"github.com/obversa/obversa/store"
)

// Phases of a run as status reports them: the record's phases
// (runstate.Phase), and PhaseInterrupted.
const (
	PhaseStarting   = string(runstate.PhaseStarting)
	PhaseRunning    = string(runstate.PhaseRunning)
	PhaseRecovering = string(runstate.PhaseRecovering)
	PhasePaused     = string(runstate.PhasePaused)
	PhaseCompleted  = string(runstate.PhaseCompleted)
	PhaseFailed     = string(runstate.PhaseFailed)
	PhaseStopped    = string(runstate.PhaseStopped)
	// PhaseInterrupted: no result, and no watchdog holds the run (it was
	// killed); `obversa resume` takes the run over (runview.Phase).
	PhaseInterrupted = runview.PhaseInterrupted
)

// Report is `obversa status`: what the record and the process table say
// about a run, read-only. Durations are milliseconds; a node's usage is
// "unknown" when any call of it did not report usage or one is in flight.
type Report struct {
	RunID  string        `json:"run_id"`
	Phase  string        `json:"phase"`
	Worker *WorkerReport `json:"worker"`
	// RestartCount is how many workers were restarted after a crash, over
	// every watchdog of the run (RestartsUsed, kept for older readers).
	RestartCount int `json:"restart_count"`
	// RestartsUsed and RestartsLeft are the run's restart budget
	// (restart.max_restarts): a resume goes on counting, a pause restores
	// nothing (docs/decisions.md, "Restart budget").
	RestartsUsed       int                  `json:"restarts_used"`
	RestartsLeft       int                  `json:"restarts_left"`
	ElapsedMS          int64                `json:"elapsed_ms"`
	RemainingTimeoutMS *int64               `json:"remaining_timeout_ms"`
	PauseReasons       []graph.PauseRequest `json:"pause_reasons"`
	// Decided maps each position of PauseReasons paused for approval
	// whose decision (allow or deny) is recorded but was not carried on
	// yet (approve --no-resume, or an approve that ended before it
	// resumed the run) to that decision: a plain resume carries it on.
	Decided map[string]string `json:"decided,omitempty"`
	// Active are the positions started and not settled; in an
	// interrupted run, those it left started, timed up to InterruptedAt.
	Active []Active `json:"active"`
	// InterruptedAt is set for an interrupted run: the time of its last
	// recorded event, since which nothing carried it on.
	InterruptedAt *time.Time `json:"interrupted_at,omitempty"`
	// Loops are the graph's loops: the round each is in (or ended in).
	Loops []LoopReport `json:"loops"`
	// ForEach are the for_each nodes: their instances so far.
	ForEach []ForEachReport `json:"for_each"`
	Usage   []NodeUsage     `json:"usage"`
	// UsageTotals sums the recorded engine calls of the run's nodes, per
	// lane too, with the count of calls that measured no usage.
	UsageTotals     *runstate.RunUsage `json:"usage_totals"`
	Events          int64              `json:"events"`
	CleanupVerified *bool              `json:"cleanup_verified"`
	// Processes are the live processes carrying the run's owner marker.
	Processes []proc.Proc `json:"processes"`
	// Backoff is set while the watchdog waits to restart a crashed worker.
	Backoff *BackoffReport `json:"backoff"`
	// LastExit is the last worker crash the record holds: since the last
	// worker started (the run is recovering), or the one that worker was
	// started after; nil when neither was recorded.
	LastExit *ExitReport `json:"last_exit,omitempty"`
	// LeaseRetained reports whether the run still holds its workspace: a
	// worker or a surviving process of the run is alive and the workspace
	// provider is not "none".
	LeaseRetained bool             `json:"lease_retained"`
	Result        *runstate.Result `json:"result,omitempty"`
	// Preflight is the preflight phase (disabled, pending, admitted,
	// paused, failed), the probe a crash left open if any, and the live
	// probes' usage, kept apart from Usage.
	Preflight *runstate.PreflightReport `json:"preflight"`
	// Confinement is the confinement in force for the run's plugins on
	// this machine.
	Confinement *ConfinementReport `json:"confinement"`
	// LockNote says why the run lock's holder record was set aside: it
	// cannot be parsed and no process holds the lock, so it is stale and
	// the run has no owner (Owner.Note). Empty otherwise.
	LockNote string `json:"lock_note,omitempty"`
}

// BackoffReport is the wait before the next worker, in milliseconds.
type BackoffReport struct {
	Restart     int   `json:"restart"`
	TotalMS     int64 `json:"total_ms"`
	RemainingMS int64 `json:"remaining_ms"`
}

// WorkerReport is the last worker and whether it still runs: by pid and
// start time on this host; for a worker on another host (Host set), by
// its owner's lease.
type WorkerReport struct {
	PID       int    `json:"pid"`
	StartTime uint64 `json:"start_time"`
	Alive     bool   `json:"alive"`
	// Host is the worker's host when it is not this one.
	Host string `json:"host,omitempty"`
}

// Active is an occurrence in flight.
type Active struct {
	Node      string    `json:"node"`
	Position  string    `json:"position"`
	StartedAt time.Time `json:"started_at"`
	ElapsedMS int64     `json:"elapsed_ms"`
	Usage     string    `json:"usage"`
	// RemainingTimeoutMS is what is left of the node's timeout; null when
	// the node has none.
	RemainingTimeoutMS *int64 `json:"remaining_timeout_ms"`
	// CutOff is true when nothing carries the run on (paused or
	// interrupted): the attempt runs no more and ElapsedMS stopped when
	// the run was last carried on (runview.StatusInterrupted).
	CutOff bool `json:"cut_off,omitempty"`
}

// LoopReport is where a loop stands (runview.Loop).
type LoopReport = runview.Loop

// ForEachReport is where a for_each node stands (runview.ForEach).
type ForEachReport = runview.ForEach

// NodeUsage is one node's usage total: "unknown" or the summed counters
// (UsageCounters).
type NodeUsage struct {
	Node  string `json:"node"`
	Usage any    `json:"usage"`
}

// Status reads the run ref names into a Report: the record through one
// streaming fold (runstate), its ownership (Ref.Owner: the lock holder's
// process, or the lease) and this host's process table for liveness.
func Status(ctx context.Context, ref Ref) (*Report, error) {
	w, err := WatchStatus(ctx, ref)
	if err != nil {
		return nil, err
	}
	defer w.Close()
	return w.Report(ctx)
}

// StatusWatch reports on one run again and again (`obversa status
// --watch`) through one read-only handle, folding at each Report only
// what was recorded since the last one.
type StatusWatch struct {
	ref    Ref
	run    store.Record
	ahead  *runstate.Ahead // the fold snapshot restored while the record opened; nil after the first Report
	st     *runstate.State
	marker string
	over   bool
}

// snapshotDirer is a Ref that knows its run directory, and so where its
// fold snapshot is, before the record is open (DirRef).
type snapshotDirer interface{ snapshotDir() string }

// WatchStatus opens the run ref names read-only for Reports; Close
// releases it. A run directory's fold snapshot is read and restored on
// a goroutine of its own while the record opens (runstate.RestoreAhead):
// the open reads and checksums the whole record, the restore reads the
// snapshot, and neither needs the other until the first Report ties them
// (status of a 100 000-event run spends about a fifth of its time in
// each). Errors: the open's.
func WatchStatus(ctx context.Context, ref Ref) (*StatusWatch, error) {
	var ahead *runstate.Ahead
	if d, ok := ref.(snapshotDirer); ok {
		ahead = runstate.RestoreAhead(d.snapshotDir())
	}
	run, err := ref.OpenReadOnly(ctx)
	if err != nil {
		return nil, err
	}
	return &StatusWatch{ref: ref, run: run, ahead: ahead}, nil
}

// Report is the run's Report now, as Status: the record folded up to its
// last event, its ownership, and this host's processes. Errors: the
// fold's (naming the run; runstate.ErrNotStarted for an empty record),
// the owner's and the marker's.
func (w *StatusWatch) Report(ctx context.Context) (*Report, error) {
	var err error
	switch {
	case w.st == nil && w.ahead != nil:
		w.st, err = w.ahead.Load(ctx, w.run, w.run.Dir())
		w.ahead = nil
	case w.st == nil:
		w.st, err = runstate.LoadWithSnapshot(ctx, w.run, w.run.Dir())
	default:
		// A later report of a run that was removed meanwhile says so,
		// instead of the last state without end.
		if p, ok := w.run.(presenter); ok {
			err = p.Present(ctx)
		}
		if err == nil {
			err = w.st.CatchUp(ctx, w.run)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", w.ref, err)
	}
	owner, err := w.ref.Owner(ctx, w.run)
	if err != nil {
		return nil, err
	}
	if w.marker == "" {
		if w.marker, err = w.ref.Marker(ctx); err != nil {
			return nil, err
		}
	}
	w.over = Over(w.st.Ending(), owner)
	return View(w.st, w.marker, time.Now(), owner), nil
}

// presenter is a record that can tell whether its run is still stored
// (store.Run.Present).
type presenter interface {
	Present(ctx context.Context) error
}

// Over reports whether the run was over (Over) at the last Report: its
// result and everything after it are recorded, so a watch can stop. A
// paused or interrupted run is not over.
func (w *StatusWatch) Over() bool { return w.over }

// Close releases the run's handle.
func (w *StatusWatch) Close() error { return w.run.Close() }

// View is the Report of a folded record at time now; marker is the owner
// marker of the run's processes on this host, owner who owns the run (a
// run no live owner holds is interrupted).
func View(st *runstate.State, marker string, now time.Time, owner Owner) *Report {
	rs := st.Start()
	r := &Report{RunID: rs.RunID, Phase: runview.Phase(st, owner.Live), Events: st.Rev(), RestartCount: 0,
		PauseReasons: []graph.PauseRequest{}, Active: []Active{},
		CleanupVerified: st.CleanupVerified(), Result: st.Result(), LockNote: owner.Note}
	rep := st.Preflight().Report()
	r.Preflight = &rep
	r.Confinement = Confinement(rs.Plan, confine.Detect())
	if st.Finished() != nil {
		// A finished run's clocks stopped with it.
		now = st.FinishedAt()
	}
	r.ElapsedMS = now.Sub(rs.StartedAt).Milliseconds()
	if at, halted := st.Halted(owner.Live); halted && st.Finished() == nil {
		// Nothing carries a paused or interrupted run on: its elapsed
		// time stops at its last event, as runs and show say it. The
		// timeout below counts on: it counts pauses (docs/run-file.md).
		r.ElapsedMS = at.Sub(rs.StartedAt).Milliseconds()
	}
	if t := rs.Plan.Timeout(); t > 0 {
		left := max(t-now.Sub(rs.StartedAt), 0).Milliseconds()
		r.RemainingTimeoutMS = &left
	}
	if w := st.Worker(); w != nil {
		r.Worker = &WorkerReport{PID: w.PID, StartTime: w.StartTime}
		if owner.Found && !owner.Here {
			// Its pid is another host's: the owner's lease speaks for it.
			r.Worker.Alive, r.Worker.Host = owner.Live, owner.Holder.Host
		} else {
			r.Worker.Alive = proc.Alive(proc.Proc{PID: w.PID, StartTime: w.StartTime})
		}
		r.RestartCount = w.Restart
	}
	r.RestartsUsed = r.RestartCount
	r.RestartsLeft = max(rs.Plan.Restart.MaxRestarts-r.RestartsUsed, 0)
	r.UsageTotals = st.RunUsage()
	if r.Result == nil {
		// runview.Phase said interrupted if no live owner holds the run; a
		// held one whose worker is gone is between workers.
		if r.Phase == PhaseRunning && (r.Worker == nil || !r.Worker.Alive) {
			r.Phase = PhaseRecovering
		}
	} else if r.Result.Kind == runstate.KindPaused || !r.Result.Terminal() {
		if out := r.Result.Output; out != nil && len(out.Paused) > 0 {
			r.PauseReasons = append(r.PauseReasons, out.Paused...)
		} else if r.Result.Code != "" {
			// A pause the watchdog or preflight decided: no position waits.
			r.PauseReasons = append(r.PauseReasons, graph.PauseRequest{Kind: r.Result.Code})
		}
	}
	if r.Result == nil || r.Result.Kind == runstate.KindPaused || !r.Result.Terminal() {
		// What was recorded since the run was last carried on may not
		// name every position a person must still answer (a worker that
		// crashed, or a run paused by an operator or a full disk, after a
		// resume of one position of several; a live run): list them all,
		// as resume asks for them.
		r.PauseReasons = appendPaused(r.PauseReasons, pausedRequests(st))
	}
	r.Decided = decided(st, r.PauseReasons)
	viewActive(r, st, now, owner.Live)
	r.Loops, r.ForEach = runview.Groups(st, owner.Live)
	if ps, err := proc.Marked(launch.OwnerEnv+"="+marker, map[int]bool{os.Getpid(): true}); err == nil && ps != nil {
		r.Processes = ps
	} else {
		r.Processes = []proc.Proc{}
	}
	viewExits(r, st, rs.Plan.Restart, now)
	if p := rs.Plan.Workspace.Provider; p != "" && p != "none" {
		r.LeaseRetained = (r.Worker != nil && r.Worker.Alive) || len(r.Processes) > 0
	}
	r.Usage = make([]NodeUsage, 0, st.UsageNodes())
	for u := range st.Usages() {
		r.Usage = append(r.Usage, NodeUsage{Node: u.Node, Usage: usageValue(u.Usage)})
	}
	return r
}

// appendPaused appends to have the requests of more whose position it
// does not list yet.
func appendPaused(have, more []graph.PauseRequest) []graph.PauseRequest {
	for _, p := range more {
		if !slices.ContainsFunc(have, func(h graph.PauseRequest) bool { return h.Position == p.Position }) {
			have = append(have, p)
		}
	}
	return have
}

// active lists the started positions with no result, by position, timed
// up to now; cutOff says that nothing carries the run on
// (runstate.State.Halted).
func active(st *runstate.State, now time.Time, cutOff bool) []Active {
	out := []Active{}
	for _, n := range st.Graph().Nodes() {
		if n.Status != graph.StatusStarted {
			continue
		}
		a := Active{Node: n.Def.ID, Position: n.Position, Usage: "unknown", CutOff: cutOff}
		if p := st.Position(n.Position); p != nil {
			a.StartedAt = p.StartedAt
			a.ElapsedMS = now.Sub(p.StartedAt).Milliseconds()
		}
		if u, ok := st.NodeUsageOf(n.Def.ID); ok && u.Known {
			a.Usage = "reported"
		}
		if t := n.Def.Timeout(); t > 0 {
			left := max(t.Milliseconds()-a.ElapsedMS, 0)
			a.RemainingTimeoutMS = &left
		}
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Position < out[j].Position })
	return out
}

// UsageCounters is a node's known usage total as status reports it, in
// tokens. Its fields are in the order of their JSON names, so it encodes
// as the map of counters earlier versions reported did, byte for byte;
// being a struct, a report of a run of many nodes costs one value per
// node instead of a map.
type UsageCounters struct {
	CacheCreation int64 `json:"cache_creation"`
	CacheRead     int64 `json:"cache_read"`
	Input         int64 `json:"input"`
	Output        int64 `json:"output"`
}

// usageValue is a usage total as status prints it: "unknown", or the
// summed counters (UsageCounters).
func usageValue(u plugin.Usage) any {
	if !u.Known {
		return "unknown"
	}
	return UsageCounters{Input: u.Input, Output: u.Output, CacheRead: u.CacheRead, CacheCreation: u.CacheCreation}
}
