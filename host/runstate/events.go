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
	// Reason is ExitCrash (the watchdog restarts the worker) or
	// ExitStorage (the record could not be written: the run pauses).
	Reason string `json:"reason"`
	// Code, Message and Path are the cause the worker reported before it
	// exited, when it could: a stable code (STORAGE_FULL, RUN_STORAGE,
	// PLUGIN_HANDSHAKE, PLUGIN_DIED, …), what happened in words (capped,
	// known secrets redacted) and, for a storage error, the file or
	// directory. Empty when the worker said nothing (killed, or a record
	// written before causes were kept).
	Code    string `json:"code,omitempty"`
	Message string `json:"message,omitempty"`
	Path    string `json:"path,omitempty"`
	// DiedUnder is, for PLUGIN_DIED, the position whose attempt the
	// plugin died under. Records written before it was kept leave it
	// empty; their Message ends with DiedUnder(position) instead.
	DiedUnder string `json:"died_under,omitempty"`
}

// Worker exit reasons (WorkerExitedData.Reason).
const (
	ExitCrash   = "crash"
	ExitStorage = "storage"
)

// CleanupData is the data of run:cleanup: what was stopped after a worker
// and whether nothing of the run survived. The lists hold at most
// MaxCleanupListed processes each; Unlisted counts the others, so the
// event stays small however many processes a run left behind.
type CleanupData struct {
	Stopped   []proc.Proc `json:"stopped"`
	Survivors []proc.Proc `json:"survivors"`
	Verified  bool        `json:"verified"`
	Unlisted  int         `json:"unlisted,omitempty"`
}

// MaxCleanupListed is how many processes each list of run:cleanup names.
const MaxCleanupListed = 64

// NewCleanup returns the run:cleanup of a cleanup that stopped stopped
// and left survivors (verified when none survived), each list cut to
// MaxCleanupListed.
func NewCleanup(stopped, survivors []proc.Proc) CleanupData {
	d := CleanupData{Stopped: stopped, Survivors: survivors, Verified: len(survivors) == 0}
	if d.Stopped == nil {
		d.Stopped = []proc.Proc{}
	}
	if d.Survivors == nil {
		d.Survivors = []proc.Proc{}
	}
	if n := len(d.Stopped) - MaxCleanupListed; n > 0 {
		d.Stopped, d.Unlisted = d.Stopped[:MaxCleanupListed], d.Unlisted+n
	}
	if n := len(d.Survivors) - MaxCleanupListed; n > 0 {
		d.Survivors, d.Unlisted = d.Survivors[:MaxCleanupListed], d.Unlisted+n
	}
	return d
}

// TakeoverData is the data of run:takeover.
type TakeoverData struct {
	PID     int         `json:"pid"`
	Stopped []proc.Proc `json:"stopped"`
}

// SnapshotData is the data of run:workspace-snapshot and run:pause-anchor:
// a workspace snapshot stored as an artifact (Anchor), or, when the
// record's policy refused the snapshot's artifact (too large), its digest
// alone: a resume then compares digests and can only say that the
// workspace changed, not what.
type SnapshotData struct {
	Provider string             `json:"provider"`
	Digest   string             `json:"digest"`
	Files    int                `json:"files"`
	Head     string             `json:"head,omitempty"`
	Anchor   *store.ArtifactRef `json:"anchor,omitempty"`
}

// RunResumedData is the data of graph:run-resumed: an operator carried a
// paused or interrupted run on; Position is the position named, if any.
type RunResumedData struct {
	Position string `json:"position"`
}
