package runstate

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/obversa/obversa/host/graph"
	"github.com/obversa/obversa/plugin"
)

// TestUsageTotals: the run's totals count what each call measured and how
// many calls measured nothing, per lane too; a node whose call is in
// flight reads unknown; the end of the run aborts what is in flight and
// counts its call unmeasured; crashed workers count against the restart
// budget.
func TestUsageTotals(t *testing.T) {
	s, err := record(t,
		graph.EventRunStarted, started(t),
		EventWorkerStarted, WorkerStartedData{PID: 1},
		graph.EventNodeDispatched, graph.DispatchedData{Dispatches: []graph.Dispatch{{Node: "a", Position: "dag/a/1"}}},
		graph.EventAttemptStarted, graph.AttemptStartedData{Node: "a", Position: "dag/a/1"},
		graph.EventEngineAttempt, graph.EngineAttemptData{Node: "a", Position: "dag/a/1", Sequence: 1, Usage: json.RawMessage(`{"known":true,"input":4,"output":2,"cache_read":1}`)},
		EventWorkerExited, WorkerExitedData{PID: 1, Reason: "crash"},
		EventWorkerStarted, WorkerStartedData{PID: 2, Restart: 1},
	)
	if err != nil {
		t.Fatal(err)
	}
	want := Totals{Input: 4, Output: 2, CacheRead: 1}
	if got := s.RunUsage(); !cmp.Equal(got.Totals, want) || !cmp.Equal(got.Lanes, map[string]Totals{"w": want}) {
		t.Errorf("RunUsage %+v, want %+v on lane w", got, want)
	}
	// a's attempt is still started: its usage is unknown, never the sum
	// so far.
	if u, ok := s.NodeUsageOf("a"); !ok || u.Known {
		t.Errorf("a in flight: %+v %v, want unknown", u, ok)
	}
	if got := s.Usage(); len(got) != 1 || got[0].Usage.Known {
		t.Errorf("Usage %+v, want a unknown", got)
	}
	if s.Restarts() != 1 {
		t.Errorf("Restarts %d, want 1", s.Restarts())
	}
	events, usage := s.Aborted(CodeStopped, time.Time{})
	if len(events) != 2 || events[0].Type != graph.EventEngineAttempt || events[1].Type != graph.EventNodeFailed {
		t.Fatalf("Aborted events %+v", events)
	}
	if f := events[1].Data.(graph.FailedData); f.Code != CodeAborted || f.Position != "dag/a/1" {
		t.Errorf("abort %+v", f)
	}
	want.UnmeasuredCalls = 1
	if !cmp.Equal(usage.Totals, want) || usage.Lanes["w"].UnmeasuredCalls != 1 {
		t.Errorf("usage after the abort %+v, want %+v", usage, want)
	}
	// Folding them gives the same totals, and a's usage is unknown for good.
	for _, e := range events {
		if err := s.Fold(e.Type, e.Data, nil); err != nil {
			t.Fatal(err)
		}
	}
	if got := s.RunUsage(); !cmp.Equal(got, usage) {
		t.Errorf("folded %+v, Aborted said %+v", got, usage)
	}
	if u, _ := s.NodeUsageOf("a"); u != (plugin.Usage{}) {
		t.Errorf("a after the abort %+v, want unknown", u)
	}
}

// TestUsageSumsStopAtTheLargestExactCount: totals the record carries
// (graph:run-finished, the preflight report) stop at 2^53 − 1, the largest
// integer it holds exactly, rather than growing past it (a total the
// record refuses, so the run could never end) or wrapping negative.
func TestUsageSumsStopAtTheLargestExactCount(t *testing.T) {
	const maxCount = plugin.MaxUsageCount
	call := func(n int64) json.RawMessage {
		b, _ := json.Marshal(map[string]any{"known": true, "input": n, "output": 1})
		return b
	}
	s, err := record(t,
		graph.EventRunStarted, started(t),
		EventWorkerStarted, WorkerStartedData{PID: 1},
		graph.EventNodeDispatched, graph.DispatchedData{Dispatches: []graph.Dispatch{{Node: "a", Position: "dag/a/1"}}},
		graph.EventAttemptStarted, graph.AttemptStartedData{Node: "a", Position: "dag/a/1"},
		graph.EventEngineAttempt, graph.EngineAttemptData{Node: "a", Position: "dag/a/1", Sequence: 1, Usage: call(maxCount)},
		graph.EventEngineAttempt, graph.EngineAttemptData{Node: "a", Position: "dag/a/1", Sequence: 2, Usage: call(maxCount)},
		graph.EventEngineAttempt, graph.EngineAttemptData{Node: "a", Position: "dag/a/1", Sequence: 3, Usage: call(5)},
	)
	if err != nil {
		t.Fatal(err)
	}
	want := Totals{Input: maxCount, Output: 3}
	if got := s.RunUsage(); !cmp.Equal(got.Totals, want) || !cmp.Equal(got.Lanes, map[string]Totals{"w": want}) {
		t.Errorf("RunUsage %+v, want %+v on lane w", got, want)
	}
	for _, tt := range []struct{ a, b, want int64 }{
		{1, 2, 3},
		{maxCount - 1, 1, maxCount},
		{maxCount, 1, maxCount},
		{maxCount, maxCount, maxCount},
		{1 << 62, 1 << 62, maxCount},
	} {
		got := SumUsage(plugin.Usage{Known: true, Input: tt.a, CacheRead: tt.b}, plugin.Usage{Known: true, Input: tt.b, CacheRead: tt.a})
		if got.Input != tt.want || got.CacheRead != tt.want {
			t.Errorf("SumUsage of %d and %d = %+v, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}
