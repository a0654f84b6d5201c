package plugin

import (
	"context"
	"fmt"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	pb "github.com/obversa/obversa/plugin/internal/pluginv1"
)

// maxSettledRecords bounds how many Run attempts the settle recorder
// remembers; the oldest settled attempts are forgotten first.
const maxSettledRecords = 1024

var scenarioKindWire = map[ScenarioKind]pb.ScenarioKind{
	ScenarioFailure:      pb.ScenarioKind_SCENARIO_KIND_FAILURE,
	ScenarioDelay:        pb.ScenarioKind_SCENARIO_KIND_DELAY,
	ScenarioUnknownUsage: pb.ScenarioKind_SCENARIO_KIND_UNKNOWN_USAGE,
	ScenarioToolEvents:   pb.ScenarioKind_SCENARIO_KIND_TOOL_EVENTS,
	ScenarioLateFinal:    pb.ScenarioKind_SCENARIO_KIND_LATE_FINAL,
	ScenarioPanic:        pb.ScenarioKind_SCENARIO_KIND_PANIC,
}

var scenarioKindGo = invert(scenarioKindWire)

// conformanceServer serves a Conformance implementation; Settled is
// answered from the recorder.
type conformanceServer struct {
	pb.UnimplementedConformanceServer
	impl Conformance
	rec  *settleRecorder
}

// Scenarios implements pb.ConformanceServer; kinds unknown to the wire are
// dropped.
func (s *conformanceServer) Scenarios(ctx context.Context, _ *pb.ScenariosRequest) (*pb.ScenariosResponse, error) {
	kinds, err := s.impl.Scenarios(ctx)
	if err != nil {
		return nil, failureStatus(errorToFailure(err))
	}
	out := &pb.ScenariosResponse{}
	for _, k := range kinds {
		if w, ok := scenarioKindWire[k]; ok {
			out.Kinds = append(out.Kinds, w)
		}
	}
	return out, nil
}

// Arm implements pb.ConformanceServer. An unknown scenario is
// InvalidArgument; an error from the implementation a typed failure.
func (s *conformanceServer) Arm(ctx context.Context, req *pb.ArmRequest) (*pb.ArmResponse, error) {
	sc, err := scenarioFromProto(req.GetScenario())
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	if err := s.impl.Arm(ctx, req.GetAttemptId(), sc); err != nil {
		return nil, failureStatus(errorToFailure(err))
	}
	return &pb.ArmResponse{}, nil
}

// Settled implements pb.ConformanceServer.
func (s *conformanceServer) Settled(ctx context.Context, req *pb.SettledRequest) (*pb.SettledResponse, error) {
	return s.rec.wait(ctx, req.GetAttemptId(), msToDuration(req.GetWaitMs())), nil
}

// ModelCalls implements pb.ConformanceServer.
func (s *conformanceServer) ModelCalls(ctx context.Context, _ *pb.ModelCallsRequest) (*pb.ModelCallsResponse, error) {
	n, err := s.impl.ModelCalls(ctx)
	if err != nil {
		return nil, failureStatus(errorToFailure(err))
	}
	return &pb.ModelCallsResponse{Count: uint64(max(n, 0))}, nil
}

func scenarioToProto(s Scenario) *pb.Scenario {
	m := &pb.Scenario{Kind: scenarioKindWire[s.Kind], DelayMs: durationToMs(s.Delay)}
	if s.Kind == ScenarioFailure {
		m.FailureKind = failureKindWire[s.Failure]
	}
	return m
}

func scenarioFromProto(m *pb.Scenario) (Scenario, error) {
	kind, ok := scenarioKindGo[m.GetKind()]
	if !ok {
		return Scenario{}, fmt.Errorf("unknown scenario kind %d", m.GetKind())
	}
	s := Scenario{Kind: kind, Delay: msToDuration(m.GetDelayMs())}
	if kind == ScenarioFailure {
		f, ok := failureKindGo[m.GetFailureKind()]
		if !ok {
			return Scenario{}, fmt.Errorf("unknown failure kind %d", m.GetFailureKind())
		}
		s.Failure = f
	}
	return s, nil
}

// settleRecorder remembers, per attempt id, whether a Run handler started
// and what terminal message it produced.
type settleRecorder struct {
	mu      sync.Mutex
	runs    map[string]*settleRecord
	settled []string // attempt ids in settling order, for eviction
}

type settleRecord struct {
	done chan struct{}
	// terminal is the terminal RunMessage in its wire form, written as
	// the Run settles (cheaply, wire_attempts_encode.go) and decoded only
	// when the conformance kit asks for it.
	terminal []byte
}

// terminalMessage decodes the recorded terminal message.
func (r *settleRecord) terminalMessage() *pb.RunMessage {
	m := &pb.RunMessage{}
	if err := proto.Unmarshal(r.terminal, m); err != nil {
		return nil // not reached: the bytes are this package's encoding
	}
	return m
}

func newSettleRecorder() *settleRecorder {
	return &settleRecorder{runs: map[string]*settleRecord{}}
}

// begin records that a Run for id started and returns the function that
// records its terminal message, in its wire form. An empty id is not
// recorded.
func (r *settleRecorder) begin(id string) func([]byte) {
	if r == nil || id == "" {
		return func([]byte) {}
	}
	rec := &settleRecord{done: make(chan struct{})}
	r.mu.Lock()
	r.runs[id] = rec
	r.mu.Unlock()
	return func(m []byte) {
		r.mu.Lock()
		defer r.mu.Unlock()
		rec.terminal = m
		close(rec.done)
		r.settled = append(r.settled, id)
		for len(r.settled) > maxSettledRecords {
			old := r.settled[0]
			r.settled = r.settled[1:]
			if x := r.runs[old]; x != nil && isClosed(x.done) {
				delete(r.runs, old)
			}
		}
	}
}

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// wait answers Settled: it waits up to d (or until ctx ends) for the run
// of id to settle.
func (r *settleRecorder) wait(ctx context.Context, id string, d time.Duration) *pb.SettledResponse {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		r.mu.Lock()
		rec := r.runs[id]
		r.mu.Unlock()
		if rec != nil {
			if isClosed(rec.done) {
				return &pb.SettledResponse{Started: true, Settled: true, Terminal: rec.terminalMessage()}
			}
			select {
			case <-rec.done:
				return &pb.SettledResponse{Started: true, Settled: true, Terminal: rec.terminalMessage()}
			case <-ctx.Done():
				return &pb.SettledResponse{Started: true}
			case <-t.C:
				return &pb.SettledResponse{Started: true}
			}
		}
		// Not started yet: look again shortly, the Run may be on its way.
		select {
		case <-ctx.Done():
			return &pb.SettledResponse{}
		case <-t.C:
			return &pb.SettledResponse{}
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// servedEngine is the Engine Serve serves: it refuses a read request
// without tools before the implementation sees it (WorkspaceModeRead) and,
// when the Conformance service is served, records how every Run settles.
type servedEngine struct {
	Engine
	rec *settleRecorder
}

// Run implements Engine.
func (e *servedEngine) Run(ctx context.Context, req RunRequest, emit Emitter) (res *RunResult, err error) {
	settle := e.rec.begin(req.AttemptID)
	defer func() {
		if v := recover(); v != nil {
			settle(appendFailureMessage(nil, &Failure{Kind: FailureUnknown, Message: fmt.Sprintf("plugin panicked in Run: %v", v)}))
			panic(v)
		}
		switch {
		case err != nil:
			settle(appendFailureMessage(nil, errorToFailure(err)))
		case res == nil:
			settle(appendFailureMessage(nil, errorToFailure(fmt.Errorf("Run: %w", errNilAnswer))))
		default:
			settle(appendResultMessage(nil, res))
		}
	}()
	if req.WorkspaceMode == WorkspaceModeRead && len(req.Tools) == 0 {
		return nil, &Failure{Kind: FailureInvalidConfig, Provider: req.Target.Provider, Model: req.Target.Model,
			Message: `workspace_mode "read" needs at least one tool to read the workspace with, and the request names none`}
	}
	return e.Engine.Run(ctx, req, emit)
}

// serveEngineConfig returns the Engine and the Conformance implementation
// Serve serves for cfg, with the recorder that answers Settled: the
// explicit cfg.Conformance, else the Engine itself when it implements
// Conformance, else none.
func serveEngineConfig(cfg ServeConfig) (Engine, Conformance, *settleRecorder) {
	conf := cfg.Conformance
	if conf == nil && cfg.Engine != nil {
		conf, _ = cfg.Engine.(Conformance)
	}
	var rec *settleRecorder
	if conf != nil {
		rec = newSettleRecorder()
	}
	var engine Engine
	if cfg.Engine != nil {
		engine = &servedEngine{Engine: cfg.Engine, rec: rec}
	}
	return engine, conf, rec
}
