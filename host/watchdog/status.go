package watchdog

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"time"

	"github.com/obversa/obversa/host/executor"
	"github.com/obversa/obversa/host/graph"
	"github.com/obversa/obversa/host/launch"
	"github.com/obversa/obversa/host/plan"
	"github.com/obversa/obversa/internal/proc"
	"github.com/obversa/obversa/plugin"
	"github.com/obversa/obversa/store"
)

// Phases of a run as status reports them.
const (
	PhaseStarting   = "starting"
	PhaseRunning    = "running"
	PhaseRecovering = "recovering"
	PhasePaused     = "paused"
	PhaseCompleted  = "completed"
	PhaseFailed     = "failed"
	PhaseStopped    = "stopped"
	// PhaseInterrupted: no result, and no watchdog holds the run (it was
	// killed); `obversa resume` takes the run over.
	PhaseInterrupted = "interrupted"
)

// Report is `obversa status`: what the record and the process table say
// about a run, read-only. Durations are milliseconds; usage totals stay
// "unknown" when any call of the node did not report usage.
type Report struct {
	RunID              string               `json:"run_id"`
	Phase              string               `json:"phase"`
	Worker             *WorkerReport        `json:"worker"`
	RestartCount       int                  `json:"restart_count"`
	ElapsedMS          int64                `json:"elapsed_ms"`
	RemainingTimeoutMS *int64               `json:"remaining_timeout_ms"`
	PauseReasons       []graph.PauseRequest `json:"pause_reasons"`
	Active             []Active             `json:"active"`
	Usage              []NodeUsage          `json:"usage"`
	Events             int64                `json:"events"`
	CleanupVerified    *bool                `json:"cleanup_verified"`
	// Processes are the live processes carrying the run's owner marker.
	Processes []proc.Proc `json:"processes"`
	// Backoff is set while the watchdog waits to restart a crashed worker.
	Backoff *BackoffReport `json:"backoff"`
	// LeaseRetained reports whether the run still holds its workspace: a
	// worker or a surviving process of the run is alive and the workspace
	// provider is not "none".
	LeaseRetained bool             `json:"lease_retained"`
	Result        *graph.RunResult `json:"result,omitempty"`
	// Preflight is the preflight phase (disabled, pending, admitted,
	// paused, failed), the probe a crash left open if any, and the live
	// probes' usage, kept apart from Usage.
	Preflight *executor.PreflightReport `json:"preflight"`
}

// BackoffReport is the wait before the next worker, in milliseconds.
type BackoffReport struct {
	Restart     int   `json:"restart"`
	TotalMS     int64 `json:"total_ms"`
	RemainingMS int64 `json:"remaining_ms"`
}

// WorkerReport is the last worker and whether it still runs (by pid and
// start time).
type WorkerReport struct {
	PID       int    `json:"pid"`
	StartTime uint64 `json:"start_time"`
	Alive     bool   `json:"alive"`
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
}

// NodeUsage is one node's usage total: "unknown" or the summed counters.
type NodeUsage struct {
	Node  string `json:"node"`
	Usage any    `json:"usage"`
}

// Status folds the record of the run at runDir into a Report. It streams
// the record and keeps only per-node totals.
func Status(ctx context.Context, runDir string) (*Report, error) {
	run, err := store.OpenRunDirReadOnly(ctx, runDir)
	if err != nil {
		return nil, err
	}
	defer run.Close()
	r := &Report{PauseReasons: []graph.PauseRequest{}, Active: []Active{}, Usage: []NodeUsage{}}
	var rs plan.RunStarted
	started := map[string]time.Time{}
	nodeOf := map[string]string{}
	usage := map[string]*plugin.Usage{}
	var order []string
	var worker *WorkerReport
	var pf *executor.PreflightFold
	var exited, ended time.Time
	exitedRestart := -1
	err = run.Read(ctx, 1, func(e store.Event) error {
		r.Events = e.Rev
		if pf != nil {
			// Status is read-only and tolerant: an event the fold rejects
			// is left out of the preflight report, `obversa verify` and the
			// executor report it.
			_ = pf.Apply(e.Type, e.Data)
		}
		var d struct {
			Node     string          `json:"node"`
			Position string          `json:"position"`
			Usage    json.RawMessage `json:"usage"`
		}
		_ = json.Unmarshal(e.Data, &d)
		switch e.Type {
		case graph.EventRunStarted:
			if err := json.Unmarshal(e.Data, &rs); err != nil {
				return err
			}
			r.RunID = rs.RunID
			r.Phase = PhaseStarting
			if rs.Plan != nil {
				pf = executor.NewPreflightFold(rs.Plan.Preflight)
			}
		case EventWorkerStarted:
			var w WorkerStartedData
			_ = json.Unmarshal(e.Data, &w)
			worker = &WorkerReport{PID: w.PID, StartTime: w.StartTime}
			r.Phase, r.RestartCount = PhaseRunning, w.Restart
			r.Result, r.CleanupVerified = nil, nil
			exitedRestart = -1
		case EventWorkerExited:
			r.Phase = PhaseRecovering
			var x WorkerExitedData
			_ = json.Unmarshal(e.Data, &x)
			exited, exitedRestart = e.TS, x.Restart
		case EventCleanup:
			var c CleanupData
			_ = json.Unmarshal(e.Data, &c)
			v := c.Verified
			r.CleanupVerified = &v
		case graph.EventAttemptStarted:
			started[d.Position], nodeOf[d.Position] = e.TS, d.Node
		case graph.EventNodeCompleted, graph.EventNodeFailed, graph.EventNodePaused:
			delete(started, d.Position)
		case graph.EventEngineAttempt:
			var u plugin.Usage
			_ = json.Unmarshal(d.Usage, &u)
			cur, seen := usage[d.Node]
			if !seen {
				order = append(order, d.Node)
				cp := u
				usage[d.Node] = &cp
			} else if cur.Known && u.Known {
				cur.Input, cur.Output = cur.Input+u.Input, cur.Output+u.Output
				cur.CacheRead, cur.CacheCreation = cur.CacheRead+u.CacheRead, cur.CacheCreation+u.CacheCreation
			} else {
				cur.Known = false
			}
		case graph.EventRunFinished, graph.EventRunWaiting:
			var res graph.RunResult
			_ = json.Unmarshal(e.Data, &res)
			r.Result = &res
			if e.Type == graph.EventRunFinished {
				ended = e.TS
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if rs.RunID == "" {
		return nil, fmt.Errorf("%w: %s has no graph:run-started event (%d events): it is not a run, or its creation failed", executor.ErrNotStarted, runDir, r.Events)
	}
	if pf != nil {
		rep := pf.Report()
		r.Preflight = &rep
	}
	now := time.Now()
	if r.Result != nil && r.Result.Kind != "pause" && !ended.IsZero() {
		// A finished run's clocks stopped with it.
		now = ended
	}
	r.ElapsedMS = now.Sub(rs.StartedAt).Milliseconds()
	if rs.Plan != nil && rs.Plan.Limits.TimeoutMS > 0 {
		left := max(rs.Plan.Limits.TimeoutMS-r.ElapsedMS, 0)
		r.RemainingTimeoutMS = &left
	}
	if worker != nil {
		worker.Alive = proc.Alive(proc.Proc{PID: worker.PID, StartTime: worker.StartTime})
		r.Worker = worker
	}
	switch {
	case r.Result == nil:
		if r.Phase == PhaseRunning && (worker == nil || !worker.Alive) {
			r.Phase = PhaseRecovering
		}
		if r.Phase != PhaseStarting {
			if h, ok, err := run.Holder(ctx); err == nil && (!ok || !store.HolderAlive(h)) {
				r.Phase = PhaseInterrupted
			}
		}
	case r.Result.Kind == "complete":
		r.Phase = PhaseCompleted
	case r.Result.Kind == "pause":
		r.Phase = PhasePaused
		var out struct {
			Waiting []graph.PauseRequest `json:"waiting"`
		}
		_ = json.Unmarshal(r.Result.Output, &out)
		r.PauseReasons = append(r.PauseReasons, out.Waiting...)
		if len(out.Waiting) == 0 && r.Result.Code != "" {
			// A pause the watchdog or preflight decided: no position waits.
			r.PauseReasons = append(r.PauseReasons, graph.PauseRequest{Kind: r.Result.Code})
		}
	case r.Result.Code == CodeStopped:
		r.Phase = PhaseStopped
	default:
		r.Phase = PhaseFailed
	}
	for pos, ts := range started {
		u := "unknown"
		if x, ok := usage[nodeOf[pos]]; ok && x.Known {
			u = "reported"
		}
		a := Active{Node: nodeOf[pos], Position: pos, StartedAt: ts, ElapsedMS: now.Sub(ts).Milliseconds(), Usage: u}
		if rs.Definition != nil {
			for _, n := range rs.Definition.Nodes {
				if n.ID == a.Node && n.TimeoutMS > 0 {
					left := max(n.TimeoutMS-a.ElapsedMS, 0)
					a.RemainingTimeoutMS = &left
				}
			}
		}
		r.Active = append(r.Active, a)
	}
	sort.Slice(r.Active, func(i, j int) bool { return r.Active[i].Position < r.Active[j].Position })
	if ps, err := proc.Marked(launch.OwnerEnv+"="+OwnerMarker(runDir), map[int]bool{os.Getpid(): true}); err == nil && ps != nil {
		r.Processes = ps
	} else {
		r.Processes = []proc.Proc{}
	}
	if r.Phase == PhaseRecovering && exitedRestart >= 0 && rs.Plan != nil {
		total := Backoff(exitedRestart, msDuration(rs.Plan.Restart.InitialBackoffMS), msDuration(rs.Plan.Restart.MaxBackoffMS))
		r.Backoff = &BackoffReport{Restart: exitedRestart + 1, TotalMS: total.Milliseconds(),
			RemainingMS: max(total-now.Sub(exited), 0).Milliseconds()}
	}
	if rs.Plan != nil && rs.Plan.Workspace.Provider != "" && rs.Plan.Workspace.Provider != "none" {
		r.LeaseRetained = (r.Worker != nil && r.Worker.Alive) || len(r.Processes) > 0
	}
	for _, n := range order {
		u := usage[n]
		if !u.Known {
			r.Usage = append(r.Usage, NodeUsage{Node: n, Usage: "unknown"})
			continue
		}
		r.Usage = append(r.Usage, NodeUsage{Node: n, Usage: map[string]int64{"input": u.Input, "output": u.Output, "cache_read": u.CacheRead, "cache_creation": u.CacheCreation}})
	}
	return r, nil
}
