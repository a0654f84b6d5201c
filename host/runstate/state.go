package runstate

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
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

// Exit is the last recorded worker crash.
type Exit struct {
	Restart int
	At      time.Time
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
	digest      string // the record's digest of the event at rev
	folded      bool   // Fold was called: the state holds unrecorded events
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
	phase      Phase
	cleanup    *bool
	anchor     *SnapshotData // newest snapshot since the last worker started
	requests   map[string]graph.ApprovalData
	takeovers  int
	crashes    int      // run:worker-exited events: workers that crashed
	totals     RunUsage // the nodes' engine calls, by lane too
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
		s.rev, s.digest = e.Rev, e.Digest
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

// apply folds one event given either its JSON (data) or its typed value.
func (s *State) apply(typ string, data json.RawMessage, v any, ts time.Time) error {
	if s.start == nil {
		if typ != graph.EventRunStarted {
			return fmt.Errorf("%w: first event is %s", ErrNotStarted, typ)
		}
		return s.applyStart(data, v)
	}
	switch {
	case strings.HasPrefix(typ, "preflight:"):
		if err := s.pf.Apply(typ, data); err != nil {
			return err
		}
		if typ == EventPreflightAdmitted {
			for _, b := range s.pf.admitted.Blocked {
				s.retired.add(graph.RetiredTarget{Adapter: b.Target.Adapter, Provider: b.Target.Provider, Model: b.Target.Model})
			}
		}
		return nil
	case strings.HasPrefix(typ, "run:"):
		return s.applyRun(typ, data, v, ts)
	}
	if !graph.NodeEvent(typ) {
		return s.applyRunLevel(typ, data, v, ts)
	}
	if v == nil {
		var err error
		if v, _, err = graph.Decode(typ, data); err != nil {
			return err
		}
	}
	if err := s.graph.ApplyData(v); err != nil {
		return err
	}
	s.track(v, ts)
	return nil
}

func (s *State) applyStart(data json.RawMessage, v any) error {
	var rs plan.RunStarted
	switch d := v.(type) {
	case *plan.RunStarted:
		rs = *d
	case plan.RunStarted:
		rs = d
	default:
		if err := json.Unmarshal(data, &rs); err != nil {
			return fmt.Errorf("%w: %v", graph.ErrInvalidEvent, err)
		}
	}
	if err := rs.Check(); err != nil {
		return err
	}
	g, err := graph.New(rs.Definition)
	if err != nil {
		return err
	}
	s.begin(&rs, g)
	return nil
}

// begin sets s up from its start and the graph state built from it.
func (s *State) begin(rs *plan.RunStarted, g *graph.State) {
	s.start, s.graph, s.pf, s.phase = rs, g, NewPreflightFold(rs.Plan.Preflight), PhaseStarting
}

// track keeps what the graph's fold does not: times, engine calls,
// approvals by request.
func (s *State) track(v any, ts time.Time) {
	s.loadPositions()
	switch d := v.(type) {
	case graph.DispatchedData:
		for _, x := range d.Dispatches {
			s.pos[x.Position] = &Position{Node: x.Node, DispatchedAt: ts}
		}
	case graph.AttemptStartedData:
		if p := s.pos[d.Position]; p != nil {
			p.StartedAt, p.SettledAt = ts, time.Time{}
		}
	case graph.CompletedData:
		s.settled(d.Position, ts)
	case graph.FailedData:
		s.settled(d.Position, ts)
	case graph.PausedData:
		s.settled(d.Position, ts)
	case graph.ApprovalData:
		if d.Request != "" {
			s.requests[d.Request] = d
		}
	}
}

func (s *State) settled(position string, ts time.Time) {
	if p := s.pos[position]; p != nil {
		p.SettledAt = ts
	}
}

// applyRunLevel folds the graph: events about the run as a whole and the
// engine-call records.
func (s *State) applyRunLevel(typ string, data json.RawMessage, v any, ts time.Time) error {
	switch typ {
	case graph.EventEngineAttempt:
		var d engineCallData
		if e, ok := v.(graph.EngineAttemptData); ok {
			d = engineCallData{Node: e.Node, Position: e.Position, Sequence: e.Sequence, Outcome: e.Outcome,
				FailureKind: e.FailureKind, Requested: e.Requested, Effective: e.Effective, PartsArtifact: e.PartsArtifact}
			if err := decodeUsage(e.Usage, &d.Usage); err != nil {
				return err
			}
		} else if err := decode(data, &d); err != nil {
			return err
		}
		s.engineCall(d)
	case graph.EventModelUnavailable:
		d, err := typed[graph.ModelUnavailableData](data, v)
		if err != nil {
			return err
		}
		s.retired.add(d.Retired...)
	case graph.EventRunFinished, graph.EventRunWaiting:
		r, err := typed[*Result](data, v)
		if err != nil {
			return err
		}
		if r == nil {
			return fmt.Errorf("%w: null result", graph.ErrInvalidEvent)
		}
		s.result(typ, restore(r, s.graph), ts)
	case graph.EventRunResumed:
		if _, err := typed[RunResumedData](data, v); err != nil {
			return err
		}
		s.finished, s.paused, s.phase = nil, nil, PhaseRunning
	default:
		return fmt.Errorf("%w %q", ErrUnknownEvent, typ)
	}
	return nil
}

// result folds graph:run-finished or graph:run-waiting.
func (s *State) result(typ string, r *Result, ts time.Time) {
	if typ == graph.EventRunWaiting {
		// Not terminal: paused, or a start refused until a person acts
		// (PROTOCOL). Either way the run waits for a person.
		s.paused = r
		s.phase = PhasePaused
		return
	}
	s.finished, s.finishedAt, s.paused = r, ts, nil
	s.phase = r.Phase()
}

// engineCallData is what the fold reads of graph:engine-attempt-recorded
// (graph.EngineAttemptData without the parts, which can be large and are
// left undecoded).
type engineCallData struct {
	Node        string          `json:"node"`
	Position    string          `json:"position"`
	Sequence    int             `json:"sequence"`
	Outcome     string          `json:"outcome"`
	FailureKind string          `json:"failure_kind"`
	Requested   json.RawMessage `json:"requested"`
	Effective   json.RawMessage `json:"effective"`
	Usage       plugin.Usage    `json:"usage"`
	// PartsArtifact references parts too large for the event.
	PartsArtifact *graph.ArtifactRef `json:"parts_artifact"`
}

// engineCall folds graph:engine-attempt-recorded: the position's calls
// and its node's usage (unknown once any call is unknown, never zero).
func (s *State) engineCall(d engineCallData) {
	s.loadPositions()
	if d.Sequence > s.seq[d.Position] {
		s.seq[d.Position] = d.Sequence
	}
	u := d.Usage
	if p := s.pos[d.Position]; p != nil {
		p.Calls = append(p.Calls, EngineCall{Sequence: d.Sequence, Outcome: d.Outcome, FailureKind: d.FailureKind,
			Requested: d.Requested, Effective: d.Effective, Usage: u, PartsArtifact: d.PartsArtifact})
	}
	s.count(d.Node, u)
}

// applyRun folds the run: family.
func (s *State) applyRun(typ string, data json.RawMessage, v any, ts time.Time) error {
	switch typ {
	case EventWorkerStarted:
		d, err := typed[WorkerStartedData](data, v)
		if err != nil {
			return err
		}
		s.worker = &Worker{PID: d.PID, StartTime: d.StartTime, Restart: d.Restart, StartedAt: ts}
		s.exit, s.cleanup, s.anchor = nil, nil, nil
		if s.phase != PhasePaused && s.finished == nil {
			s.phase = PhaseRunning
		}
	case EventWorkerExited:
		d, err := typed[WorkerExitedData](data, v)
		if err != nil {
			return err
		}
		s.exit = &Exit{Restart: d.Restart, At: ts}
		s.crashes++
		if s.finished == nil && s.paused == nil {
			s.phase = PhaseRecovering
		}
	case EventCleanup:
		d, err := typed[CleanupData](data, v)
		if err != nil {
			return err
		}
		ok := d.Verified
		s.cleanup = &ok
	case EventTakeover:
		if _, err := typed[TakeoverData](data, v); err != nil {
			return err
		}
		s.takeovers++
	case EventWorkspaceSnapshot, EventPauseAnchor:
		d, err := typed[SnapshotData](data, v)
		if err != nil {
			return err
		}
		s.anchor = &d
	default:
		return fmt.Errorf("%w %q", ErrUnknownEvent, typ)
	}
	return nil
}

// typed returns v as a T when the caller folded a typed value, else data
// decoded.
func typed[T any](data json.RawMessage, v any) (T, error) {
	if t, ok := v.(T); ok {
		return t, nil
	}
	var t T
	return t, decode(data, &t)
}
