package runstate

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/obversa/obversa/host/graph"
	"github.com/obversa/obversa/host/plan"
	"github.com/obversa/obversa/plugin"
)

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
			p.StartedAt, p.SettledAt, p.StartedUnder = ts, time.Time{}, s.workers
		}
	case graph.CompletedData:
		s.settled(d.Position, ts)
	case graph.FailedData:
		if d.CutOffAt != nil && d.CutOffAt.Before(ts) {
			ts = *d.CutOffAt
		}
		s.settled(d.Position, ts)
	case graph.PausedData:
		s.settled(d.Position, s.cutOffAt(d.Position, ts))
	case graph.ApprovalData:
		if d.Request != "" {
			s.requests[d.Request] = d
		}
	}
}

// cutOffAt is when the attempt at position stopped running, for a pause
// recorded at ts: an attempt started under an earlier worker than the one
// recording the pause (a crash's recovery pauses it for reconciliation)
// ran no more after that worker's recorded end (PreviousEnd), however
// long the restart that records the pause takes; otherwise ts.
func (s *State) cutOffAt(position string, ts time.Time) time.Time {
	p := s.pos[position]
	if p == nil || p.StartedAt.IsZero() || p.StartedUnder >= s.workers {
		return ts
	}
	if end := s.PreviousEnd(); end != nil && end.At.After(p.StartedAt) && end.At.Before(ts) {
		return end.At
	}
	return ts
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
		if err := r.check(); err != nil {
			return err
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
		if r.Kind == KindPaused && s.worker != nil && s.exit == nil {
			// The pause ends the last worker when no exit of it is
			// recorded: a fault of the record or an operator's pause
			// stopped it, and the attempts it cut off say so.
			s.stop = &Exit{Restart: s.worker.Restart, At: ts, Code: r.Code}
			if r.Output != nil {
				s.stop.Message = r.Output.Message
			}
		}
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
	s.count(d.Node, d.Position, u)
}

// applyRun folds the run: family.
func (s *State) applyRun(typ string, data json.RawMessage, v any, ts time.Time) error {
	switch typ {
	case EventWorkerStarted:
		d, err := typed[WorkerStartedData](data, v)
		if err != nil {
			return err
		}
		s.workers++
		s.worker = &Worker{PID: d.PID, StartTime: d.StartTime, Restart: d.Restart, StartedAt: ts}
		s.prevExit, s.exit, s.cleanup, s.anchor = s.exit, nil, nil, nil
		s.prevStop, s.stop = s.stop, nil
		if s.phase != PhasePaused && s.finished == nil {
			s.phase = PhaseRunning
		}
	case EventWorkerExited:
		d, err := typed[WorkerExitedData](data, v)
		if err != nil {
			return err
		}
		s.exit = &Exit{Restart: d.Restart, At: ts, ExitCode: d.ExitCode, Signal: d.Signal, Code: d.Code, Message: d.Message,
			DiedUnder: d.diedUnder()}
		s.stop = nil
		s.crashes++
		if d.Code == CodePluginDied {
			s.deaths++
		}
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
