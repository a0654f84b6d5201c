package runstate

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/obversa/obversa/host/graph"
	"github.com/obversa/obversa/host/plan"
	"github.com/obversa/obversa/host/snapcodec"
	"github.com/obversa/obversa/plugin"
	"github.com/obversa/obversa/store"
)

var (
	// ErrNotStarted is returned when the record's first event is not
	// graph:run-started (or the record is empty).
	ErrNotStarted = errors.New("run has no graph:run-started event")
	// ErrEmptyRecord is the ErrNotStarted of a record with no event at
	// all (a run cut off while it was created); it matches ErrNotStarted.
	ErrEmptyRecord = fmt.Errorf("%w (the record is empty)", ErrNotStarted)
	// ErrUnknownEvent is returned (wrapping graph.ErrInvalidEvent) for an
	// event type the fold does not know: a record written by a newer
	// version, or damage that kept its hash chain.
	ErrUnknownEvent = fmt.Errorf("%w: unknown event type", graph.ErrInvalidEvent)
)

// Phase is where a run stands according to its record alone; liveness of
// processes is for the reader to add (watchdog.Status).
type Phase string

// Record phases.
const (
	PhaseStarting   Phase = "starting"   // created, no worker recorded yet
	PhaseRunning    Phase = "running"    // a worker started and has not exited
	PhaseRecovering Phase = "recovering" // a worker crashed; the watchdog restarts it
	PhasePaused     Phase = "paused"     // waits for a person
	PhaseCompleted  Phase = "completed"
	PhaseFailed     Phase = "failed"
	PhaseStopped    Phase = "stopped"
)

// Position is what the fold knows of one position beyond the graph's
// state: when it moved, and its engine calls. Times are commit times of
// the events (zero for events folded before they were recorded).
type Position struct {
	Node         string
	DispatchedAt time.Time
	StartedAt    time.Time
	SettledAt    time.Time
	// StartedUnder is the ordinal of the last worker the record had
	// started when this attempt started (1 for the first worker): the
	// worker that ran it. 0 when it has not started, or no worker start
	// was recorded before it.
	StartedUnder int
	// Calls are the recorded engine calls, in sequence order.
	Calls []EngineCall
}

// EngineCall is one graph:engine-attempt-recorded, without its parts.
type EngineCall struct {
	Sequence    int
	Outcome     string
	FailureKind string
	Requested   json.RawMessage
	Effective   json.RawMessage
	// Usage is the call's usage; Known false when it was unfinished,
	// unreported or failed.
	Usage plugin.Usage
	// PartsArtifact references the call's result parts when they were
	// too large for the event; nil when they are inline (or none).
	PartsArtifact *graph.ArtifactRef
}

// Worker is the last worker the record knows of.
type Worker struct {
	PID       int
	StartTime uint64
	Restart   int
	StartedAt time.Time
}

// Exit is a recorded worker crash (run:worker-exited): which restart's
// worker it was, when the exit was recorded, how the process ended
// (ExitCode, or Signal when a signal ended it) and, when the worker
// reported it before it exited, the cause (Code and Message, as
// WorkerExitedData holds them).
type Exit struct {
	Restart  int
	At       time.Time
	ExitCode int    `json:",omitempty"`
	Signal   string `json:",omitempty"`
	Code     string `json:",omitempty"`
	Message  string `json:",omitempty"`
	// DiedUnder is, for a PLUGIN_DIED exit, the position whose attempt
	// the plugin died under ("" for other exits).
	DiedUnder string `json:",omitempty"`
}

// State is the one fold of a run's record (docs/decisions.md, "One
// replay"): the executor, the watchdog, status and every operator command
// read it. It is incremental — Apply takes one event at a time, in record
// order — and keeps per-position and per-node summaries, never the events
// themselves, so folding a long record streams. It is not safe for
// concurrent use; Retired may be called from any goroutine.
type State struct {
	start *plan.RunStarted
	// startDigest is the record's digest of the start (its event 1) when
	// the start was applied from the record; "" when it was folded
	// (Fold). Refold takes the start from a fold that has it.
	startDigest string
	rev         int64
	digest      string    // the record's digest of the event at rev
	lastAt      time.Time // the commit time of the event at rev
	folded      bool      // Fold was called: the state holds unrecorded events
	graph       *graph.State
	pf          *PreflightFold
	seq         map[string]int // last engine-call sequence per position
	pos         map[string]*Position
	// later holds a restored snapshot's seq and pos until first needed
	// (loadPositions); nil once they are built, or for a fold. laterMu
	// serializes the build, since readers that only read may run at
	// once.
	later   atomic.Pointer[snapcodec.Reader]
	laterMu sync.Mutex
	usage   map[string]*plugin.Usage
	order   []nodeTotal // nodes in the order their first engine call was recorded

	retired retiredList

	finished   *Result
	finishedAt time.Time
	paused     *Result // the last graph:run-waiting, until graph:run-resumed
	worker     *Worker
	exit       *Exit
	prevExit   *Exit // the exit of the worker before the last one, if recorded
	phase      Phase
	cleanup    *bool
	anchor     *SnapshotData // newest snapshot since the last worker started
	requests   map[string]graph.ApprovalData
	takeovers  int
	crashes    int      // run:worker-exited events: workers that crashed
	deaths     int      // those of them whose cause was PLUGIN_DIED
	totals     RunUsage // the nodes' engine calls, by lane too

	// stop is the pause recorded since the last worker started (a fault
	// of the record, an operator's pause), as the end of that worker when
	// no exit of it is recorded; nil otherwise.
	stop *Exit
	// prevStop is stop as the last worker started: the end of the worker
	// before it when no exit of that one was recorded.
	prevStop *Exit
	// workers counts the worker starts folded: the ordinal of the last
	// worker, and of each worker the one Position.StartedUnder names.
	// Unlike Worker.Restart it never repeats (a resume's first worker
	// keeps the restart count of the crashes before it), and unlike the
	// workers' start times it orders by the record, not by clocks.
	workers int
}

// New returns an empty fold; the first event applied must be
// graph:run-started.
func New() *State {
	return &State{seq: map[string]int{}, pos: map[string]*Position{}, usage: map[string]*plugin.Usage{}, totals: newRunUsage(),
		requests: map[string]graph.ApprovalData{}}
}

// Apply folds one recorded event. Errors name the event: ErrNotStarted
// when the first event is not graph:run-started, an error wrapping
// graph.ErrInvalidEvent when an event does not decode or does not fit the
// state at its place (ErrUnknownEvent for an unknown type), the plan's
// check errors for a bad graph:run-started.
func (s *State) Apply(e store.Event) error {
	first := s.start == nil
	if err := s.apply(e.Type, e.Data, nil, e.TS); err != nil {
		return fmt.Errorf("rev %d (%s): %w", e.Rev, e.Type, err)
	}
	if first && e.Rev > 0 {
		s.startDigest = e.Digest
	}
	if e.Rev > 0 {
		s.rev, s.digest, s.lastAt = e.Rev, e.Digest, e.TS
	}
	return nil
}

// Fold folds an event this process decided and is about to record
// (data is the value it will marshal, of the type the event's Decode
// would return; raw is its JSON when v is not a graph or run type the
// fold can read directly). Its time is unknown until it is recorded.
// Errors as Apply.
func (s *State) Fold(typ string, v any, raw json.RawMessage) error {
	s.folded = true
	return s.apply(typ, raw, v, time.Time{})
}

// Rev returns the revision of the last event applied from the record.
func (s *State) Rev() int64 { return s.rev }
