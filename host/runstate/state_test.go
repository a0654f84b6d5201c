package runstate

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/obversa/obversa/host/graph"
	"github.com/obversa/obversa/host/plan"
	"github.com/obversa/obversa/plugin"
	"github.com/obversa/obversa/store"
)

// started returns graph:run-started of a two-node graph: "a" on an engine
// lane, "b" a binding with an approval, depending on "a".
func started(t testing.TB) json.RawMessage {
	t.Helper()
	def := &graph.Definition{Name: "dag", GlobalConcurrency: 2, KeyedConcurrency: []graph.KeyLimit{}, Nodes: []graph.NodeDef{
		{ID: "a", Kind: graph.KindRequired, Lane: "w", Prompt: "p", DependsOn: []string{}, TimeoutMS: 60000},
		{ID: "b", Kind: graph.KindRequired, Binding: "shell", DependsOn: []string{"a"}, Approval: true},
	}}
	return startedOf(t, def)
}

// startedOf returns graph:run-started of def, planned with one engine lane
// "w".
func startedOf(t testing.TB, def *graph.Definition) json.RawMessage {
	t.Helper()
	p := &plan.Plan{RunID: "r", Namespace: "default", Restart: plan.Restart{MaxRestarts: 2, InitialBackoffMS: 100, MaxBackoffMS: 1000},
		Limits: plan.Limits{TimeoutMS: 600000}, Plugins: []plan.PluginPlan{}, Lanes: []plan.LanePlan{{Name: "w", Requested: target("m"), Effective: target("m"),
			KnownSubstitutions: []plugin.Identity{}, Fallbacks: []plugin.Identity{}}}}
	rs, err := plan.NewRunStarted("run.hcl", def, p, time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	return mustJSON(rs)
}

// record folds events (type, data) as revisions 1.. with times one second
// apart.
func record(t testing.TB, events ...any) (*State, error) {
	t.Helper()
	s := New()
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for i := 0; i+1 < len(events); i += 2 {
		e := store.Event{Rev: int64(i/2 + 1), Type: events[i].(string), Data: mustJSON(events[i+1]), TS: base.Add(time.Duration(i/2) * time.Second)}
		if raw, ok := events[i+1].(json.RawMessage); ok {
			e.Data = raw
		}
		if err := s.Apply(e); err != nil {
			return s, err
		}
	}
	return s, nil
}

func TestFoldOneRun(t *testing.T) {
	usage := plugin.Usage{Known: true, Input: 3, Output: 2}
	s, err := record(t,
		graph.EventRunStarted, started(t),
		EventWorkerStarted, WorkerStartedData{PID: 10, StartTime: 7},
		graph.EventNodeDispatched, graph.DispatchedData{Dispatches: []graph.Dispatch{{Node: "a", Position: "dag/a/1"}}},
		graph.EventAttemptStarted, graph.AttemptStartedData{Node: "a", Position: "dag/a/1", AttemptID: "x"},
		graph.EventEngineAttempt, graph.EngineAttemptData{Node: "a", Position: "dag/a/1", Sequence: 1, Outcome: "completed", Usage: mustJSON(usage)},
		graph.EventNodeCompleted, graph.CompletedData{Node: "a", Position: "dag/a/1", Result: json.RawMessage(`"ok"`)},
		graph.EventNodeDispatched, graph.DispatchedData{Dispatches: []graph.Dispatch{{Node: "b", Position: "dag/b/1"}}},
		graph.EventNodePaused, graph.PausedData{Node: "b", Position: "dag/b/1", Request: graph.PauseRequest{Kind: graph.PauseApproval, Position: "dag/b/1"}},
		graph.EventRunWaiting, Result{RunID: "r", Kind: KindPaused, Output: &Output{Paused: []graph.PauseRequest{{Kind: graph.PauseApproval, Position: "dag/b/1"}}}},
	)
	if err != nil {
		t.Fatal(err)
	}
	if s.Rev() != 9 || s.Phase() != PhasePaused || s.Paused() == nil || s.Finished() != nil {
		t.Fatalf("rev %d phase %s paused %v finished %v", s.Rev(), s.Phase(), s.Paused(), s.Finished())
	}
	if diff := cmp.Diff([]NodeUsage{{Node: "a", Usage: usage}}, s.Usage()); diff != "" {
		t.Errorf("usage (-want +got):\n%s", diff)
	}
	p := s.Position("dag/a/1")
	if p == nil || p.StartedAt.Sub(p.DispatchedAt) != time.Second || p.SettledAt.Sub(p.StartedAt) != 2*time.Second || len(p.Calls) != 1 {
		t.Errorf("position %+v", p)
	}
	if w := s.Worker(); w == nil || w.PID != 10 || w.StartTime != 7 {
		t.Errorf("worker %+v", w)
	}
	if got := s.PausedPositions(); !cmp.Equal(got, []string{"dag/b/1"}) || !s.AwaitingApproval() {
		t.Errorf("paused %v awaiting %v", got, s.AwaitingApproval())
	}
	if _, err := s.CheckApproval("dag/b/1"); err != nil {
		t.Errorf("CheckApproval: %v", err)
	}
	if _, err := s.CheckApproval("dag/a/1"); !errors.Is(err, ErrNotAwaitingApproval) {
		t.Errorf("CheckApproval of a passed position: %v", err)
	}
	// A pasted document given as the position is echoed cut, not whole.
	long := strings.Repeat("x", 100_000)
	if _, err := s.CheckApproval(long); !errors.Is(err, ErrNotAwaitingApproval) || len(err.Error()) > 400 || !contains(err, "(100000 bytes in all)") {
		t.Errorf("CheckApproval of a 100 000-byte position: %d bytes of error", len(fmt.Sprint(err)))
	}
	if err := s.Apply(store.Event{Rev: 10, Type: graph.EventApproval, Data: mustJSON(graph.ApprovalData{Position: "dag/b/1", Decision: graph.DecisionDeny, Request: "req-1"})}); err != nil {
		t.Fatal(err)
	}
	// The decision is said once, naming the position, what and by whom.
	if _, err := s.CheckApproval("dag/b/1"); !errors.Is(err, ErrAlreadyDecided) || err.Error() != "dag/b/1 is already decided: deny by request req-1" {
		t.Errorf("CheckApproval after a decision: %v", err)
	}
	if d, ok := s.Request("req-1"); !ok || d.Decision != graph.DecisionDeny {
		t.Errorf("Request(req-1) = %+v %v", d, ok)
	}
	// A second decision for one position does not replay.
	err = s.Apply(store.Event{Rev: 11, Type: graph.EventApproval, Data: mustJSON(graph.ApprovalData{Position: "dag/b/1", Decision: graph.DecisionAllow})})
	if !errors.Is(err, graph.ErrInvalidEvent) {
		t.Errorf("second decision: %v, want INVALID_EVENT", err)
	}
}

func contains(err error, sub string) bool { return err != nil && strings.Contains(err.Error(), sub) }

func TestFoldUsageUnknownIsNeverZero(t *testing.T) {
	s, err := record(t,
		graph.EventRunStarted, started(t),
		graph.EventNodeDispatched, graph.DispatchedData{Dispatches: []graph.Dispatch{{Node: "a", Position: "dag/a/1"}}},
		graph.EventAttemptStarted, graph.AttemptStartedData{Node: "a", Position: "dag/a/1"},
		graph.EventEngineAttempt, graph.EngineAttemptData{Node: "a", Position: "dag/a/1", Sequence: 1, Usage: json.RawMessage(`{"known":true,"input":4}`)},
		graph.EventEngineAttempt, graph.EngineAttemptData{Node: "a", Position: "dag/a/1", Sequence: 2, Usage: json.RawMessage(`{"known":false}`)},
		graph.EventEngineAttempt, graph.EngineAttemptData{Node: "a", Position: "dag/a/1", Sequence: 3, Usage: json.RawMessage(`{"known":true,"input":5}`)},
	)
	if err != nil {
		t.Fatal(err)
	}
	if u, ok := s.NodeUsageOf("a"); !ok || u.Known || u.Input != 0 {
		t.Errorf("usage %+v %v, want unknown", u, ok)
	}
	if s.Sequence("dag/a/1") != 3 {
		t.Errorf("sequence %d", s.Sequence("dag/a/1"))
	}
}

func TestFoldRejects(t *testing.T) {
	tests := []struct {
		name   string
		events []any
		want   error
	}{
		{"empty first event", []any{graph.EventNodeCompleted, json.RawMessage(`{}`)}, ErrNotStarted},
		{"unknown type", []any{graph.EventRunStarted, started(t), "graph:no-such-event", json.RawMessage(`{}`)}, ErrUnknownEvent},
		{"unknown run event", []any{graph.EventRunStarted, started(t), "run:no-such-event", json.RawMessage(`{}`)}, ErrUnknownEvent},
		{"bad result kind", []any{graph.EventRunStarted, started(t), graph.EventRunFinished, json.RawMessage(`{"kind":"maybe"}`)}, graph.ErrInvalidEvent},
		{"null result", []any{graph.EventRunStarted, started(t), graph.EventRunFinished, json.RawMessage(`null`)}, graph.ErrInvalidEvent},
		{"finished without a kind", []any{graph.EventRunStarted, started(t), graph.EventRunFinished, json.RawMessage(`{"run_id":"r","code":"X"}`)}, graph.ErrInvalidEvent},
		{"waiting without a kind", []any{graph.EventRunStarted, started(t), graph.EventRunWaiting, json.RawMessage(`{"run_id":"r"}`)}, graph.ErrInvalidEvent},
		{"worker data", []any{graph.EventRunStarted, started(t), EventWorkerStarted, json.RawMessage(`[1]`)}, graph.ErrInvalidEvent},
		{"dispatch out of order", []any{graph.EventRunStarted, started(t), graph.EventNodeDispatched,
			graph.DispatchedData{Dispatches: []graph.Dispatch{{Node: "b", Position: "dag/b/1"}}}}, graph.ErrInvalidEvent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := record(t, tt.events...); !errors.Is(err, tt.want) {
				t.Errorf("err %v, want %v", err, tt.want)
			}
		})
	}
}

// TestOlderSpellings: records written before the vocabulary was settled
// ("pause", "waiting", "nodes" as the passed list) read as today's.
func TestOlderSpellings(t *testing.T) {
	var r Result
	if err := json.Unmarshal([]byte(`{"run_id":"r","kind":"pause","code":"","output":{"waiting":[{"kind":"approval","position":"dag/b/1"}]}}`), &r); err != nil {
		t.Fatal(err)
	}
	if r.Kind != KindPaused || len(r.Output.Paused) != 1 || r.Output.Paused[0].Position != "dag/b/1" {
		t.Errorf("paused result %+v %+v", r, r.Output)
	}
	var f Result
	if err := json.Unmarshal([]byte(`{"run_id":"r","kind":"fail","code":"DAG_NODE_FAILED","output":{"failed":["b"],"nodes":["a"]}}`), &f); err != nil {
		t.Fatal(err)
	}
	if !cmp.Equal(f.Output.Passed, []string{"a"}) || f.Output.Nodes != nil {
		t.Errorf("failed output %+v", f.Output)
	}
}

// FuzzApply feeds arbitrary data under every event type the fold knows
// to a fold that has a run started: it returns an error or folds, never
// panics, and a rejected event changes nothing later events rely on.
func FuzzApply(f *testing.F) {
	types := []string{graph.EventNodeDispatched, graph.EventAttemptStarted, graph.EventEngineAttempt, graph.EventModelUnavailable,
		graph.EventNodeCompleted, graph.EventNodeFailed, graph.EventNodePaused, graph.EventNodeResumed, graph.EventApproval,
		graph.EventRunFinished, graph.EventRunWaiting, graph.EventRunResumed, EventWorkerStarted, EventWorkerExited,
		EventCleanup, EventTakeover, EventWorkspaceSnapshot, EventPauseAnchor, EventProbeStarted, EventPreflightAdmitted,
		graph.EventActionDecided, // new types go last: the seeds below name types by index
		graph.EventNodeExpanded, graph.EventLoopStarted, graph.EventRoundStarted, graph.EventLoopCondition, graph.EventLoopReviewed, graph.EventLoopFinished}
	f.Add(uint8(0), []byte(`{"dispatches":[{"node":"a","position":"dag/a/1"}]}`))
	f.Add(uint8(2), []byte(`{"node":"a","position":"dag/a/1","sequence":1,"usage":{"known":true,"input":1}}`))
	f.Add(uint8(9), []byte(`{"run_id":"r","kind":"complete","code":"","output":{"nodes":{"a":"x"}}}`))
	f.Add(uint8(10), []byte(`{"run_id":"r","kind":"pause","output":{"waiting":[]}}`))
	f.Add(uint8(12), []byte(`{"pid":1,"start_time":2,"restart":0}`))
	f.Add(uint8(slices.Index(types, graph.EventRunFinished)), []byte(`{"run_id":"r","kind":"fail","code":"BUDGET_STOP","output":{"budget":"max_output_tokens","limit":5,"used":9},`+
		`"usage":{"input":1,"output":9,"cache_read":0,"cache_creation":0,"unmeasured_calls":1,"lanes":{"w":{"input":1,"output":9}}}}`))
	f.Add(uint8(slices.Index(types, graph.EventActionDecided)), []byte(`{"node":"a","position":"dag/a/1","attempt":1,"verdict":"wait","reason":"r","policy":"guard",`+
		`"answers":[{"policy":"guard","verdict":"wait","reason":"r"}]}`))
	f.Add(uint8(slices.Index(types, graph.EventNodeExpanded)), []byte(`{"node":"a","keys":["x"]}`))
	f.Add(uint8(slices.Index(types, graph.EventLoopReviewed)), []byte(`{"loop":"a","round":1,"member":"a","position":"dag/a/1","outcome":{"status":"pass"},"accepted":true}`))
	rs := started(f)
	f.Fuzz(func(t *testing.T, kind uint8, data []byte) {
		s := New()
		if err := s.Apply(store.Event{Rev: 1, Type: graph.EventRunStarted, Data: rs}); err != nil {
			t.Fatal(err)
		}
		_ = s.Apply(store.Event{Rev: 2, Type: types[int(kind)%len(types)], Data: json.RawMessage(data)})
		_ = s.Usage()
		_ = s.RunUsage()
		_ = s.Result()
		_ = s.Preflight().Report()
		_, _ = s.CheckApproval("dag/a/1")
		if out := s.Graph().Decide().Outcome; out != nil && out.Kind == "" {
			t.Fatal("an outcome without a kind")
		}
	})
}

// TestFoldForEachUsageByLane: the engine calls of a for_each node's
// instances count under the node's lane in the run's usage by lane, as a
// plain node's do, not under a lane named "".
func TestFoldForEachUsageByLane(t *testing.T) {
	def := &graph.Definition{Name: "dag", GlobalConcurrency: 2, KeyedConcurrency: []graph.KeyLimit{}, Nodes: []graph.NodeDef{
		{ID: "a", Kind: graph.KindRequired, Lane: "w", Prompt: "p ${each.value}", DependsOn: []string{}, TimeoutMS: 60000,
			ForEach: &graph.ForEachDef{Items: []graph.ForEachItem{{Key: "x", Value: json.RawMessage(`"x"`)}}, MaxItems: 10}},
	}}
	usage := plugin.Usage{Known: true, Input: 3, Output: 2}
	s, err := record(t,
		graph.EventRunStarted, startedOf(t, def),
		graph.EventNodeExpanded, graph.ExpandedData{Node: "a", Keys: []string{"x"}},
		graph.EventNodeDispatched, graph.DispatchedData{Dispatches: []graph.Dispatch{{Node: "a", Position: "dag/a[x]/1"}}},
		graph.EventAttemptStarted, graph.AttemptStartedData{Node: "a", Position: "dag/a[x]/1", AttemptID: "x"},
		graph.EventEngineAttempt, graph.EngineAttemptData{Node: "a", Position: "dag/a[x]/1", Sequence: 1, Outcome: "completed", Usage: mustJSON(usage)},
	)
	if err != nil {
		t.Fatal(err)
	}
	got := s.totals.Lanes
	if len(got) != 1 || got["w"].Input != 3 || got["w"].Output != 2 {
		t.Errorf("usage by lane %+v, want lane w only with in 3 out 2", got)
	}
}
