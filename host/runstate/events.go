package runstate

import (
	"github.com/obversa/obversa/internal/proc"
	"github.com/obversa/obversa/store"
)

// Events of the run: family, recorded by the watchdog and the worker about
// the processes that carry a run (docs/decisions.md, "One writer").
const (
	// EventWorkerStarted is a worker's own first append: its pid and start
	// time, before it does anything else.
	EventWorkerStarted = "run:worker-started"
	// EventWorkerExited records a worker that ended without recording a
	// result (a crash); the watchdog appends it once the worker is gone.
	EventWorkerExited = "run:worker-exited"
	// EventCleanup records what the watchdog stopped after a worker.
	EventCleanup = "run:cleanup"
	// EventTakeover records that a watchdog took over a run whose previous
	// watchdog is gone, after proving no process of the run survives.
	EventTakeover = "run:takeover"
	// EventWorkspaceSnapshot records a snapshot taken after a worker
	// crashed, while the lease was held; the replacement verifies it.
	EventWorkspaceSnapshot = "run:workspace-snapshot"
	// EventPauseAnchor records the runner-pause-anchor of a pause: the
	// workspace as the run left it, which resume verifies.
	EventPauseAnchor = "run:pause-anchor"
)

// WorkerStartedData is the data of run:worker-started.
type WorkerStartedData struct {
	PID int `json:"pid"`
	// StartTime is /proc/<pid>/stat field 22 (clock ticks since boot), so
	// a reused pid is never taken for the worker.
	StartTime uint64 `json:"start_time"`
	// Restart counts the workers of this watchdog before this one.
	Restart int `json:"restart"`
}

// WorkerExitedData is the data of run:worker-exited.
type WorkerExitedData struct {
	PID      int    `json:"pid"`
	ExitCode int    `json:"exit_code"`
	Signal   string `json:"signal,omitempty"`
	Restart  int    `json:"restart"`
	Reason   string `json:"reason"`
}

// CleanupData is the data of run:cleanup: what was stopped after a worker
// and whether nothing of the run survived.
type CleanupData struct {
	Stopped   []proc.Proc `json:"stopped"`
	Survivors []proc.Proc `json:"survivors"`
	Verified  bool        `json:"verified"`
}

// TakeoverData is the data of run:takeover.
type TakeoverData struct {
	PID     int         `json:"pid"`
	Stopped []proc.Proc `json:"stopped"`
}

// SnapshotData is the data of run:workspace-snapshot and run:pause-anchor:
// a workspace snapshot stored as an artifact.
type SnapshotData struct {
	Provider string            `json:"provider"`
	Digest   string            `json:"digest"`
	Files    int               `json:"files"`
	Anchor   store.ArtifactRef `json:"anchor"`
}

// RunResumedData is the data of graph:run-resumed: an operator carried a
// paused or interrupted run on; Position is the position named, if any.
type RunResumedData struct {
	Position string `json:"position"`
}
