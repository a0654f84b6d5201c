package runstate

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/obversa/obversa/host/graph"
	"github.com/obversa/obversa/host/plan"
	"github.com/obversa/obversa/plugin"
)

func target(adapter string) plugin.Identity {
	return plugin.Identity{Adapter: adapter, Provider: "local", ModelFamily: "scripted", Model: "m1", Tools: []string{}}
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func TestPreflightFoldUsage(t *testing.T) {
	started := func(id, check string) json.RawMessage {
		return mustJSON(ProbeStartedData{Lane: "w", Target: target("m"), Check: check, ProbeID: id})
	}
	finished := func(id string, u *plugin.Usage) json.RawMessage {
		return mustJSON(ProbeFinishedData{ProbeID: id, Outcome: OutcomePassed, Usage: u})
	}
	tests := []struct {
		name   string
		usages []*plugin.Usage
		want   any
	}{
		{name: "no live probe", want: nil},
		{name: "reported usage is summed", usages: []*plugin.Usage{{Known: true, Input: 2, Output: 1}, {Known: true, Input: 3, Output: 4, CacheRead: 5}},
			want: map[string]int64{"input": 5, "output": 5, "cache_read": 5, "cache_creation": 0}},
		{name: "missing usage is unknown", usages: []*plugin.Usage{{Known: true, Input: 2}, nil}, want: "unknown"},
		{name: "unknown stays unknown", usages: []*plugin.Usage{{}, {Known: true, Input: 2}}, want: "unknown"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := NewPreflightFold(&plan.Preflight{})
			for i, u := range tt.usages {
				id := fmt.Sprintf("probe-%d", i+1)
				if err := f.Apply(EventProbeStarted, started(id, CheckLive)); err != nil {
					t.Fatal(err)
				}
				if err := f.Apply(EventProbeFinished, finished(id, u)); err != nil {
					t.Fatal(err)
				}
			}
			if diff := cmp.Diff(tt.want, f.Report().Usage); diff != "" {
				t.Errorf("usage (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPreflightFoldRejects(t *testing.T) {
	tests := []struct {
		name string
		typ  string
		data string
	}{
		{name: "finish of a probe never started", typ: EventProbeFinished, data: `{"probe_id":"probe-9","outcome":"passed"}`},
		{name: "probe without id", typ: EventProbeStarted, data: `{"lane":"w","check":"live"}`},
		{name: "malformed data", typ: EventPreflightPaused, data: `[1]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := NewPreflightFold(&plan.Preflight{})
			if err := f.Apply(tt.typ, json.RawMessage(tt.data)); !errors.Is(err, graph.ErrInvalidEvent) {
				t.Errorf("Apply: %v, want INVALID_EVENT", err)
			}
		})
	}
}

// FuzzPreflightFold feeds arbitrary event data to the fold: it returns an
// error or folds, and never panics.
func FuzzPreflightFold(f *testing.F) {
	types := []string{EventProbeStarted, EventProbeFinished, EventPreflightPaused, EventPreflightFailed,
		EventPreflightAdmitted, EventPreflightResumed, graph.EventNodeCompleted}
	f.Add(uint8(0), []byte(`{"lane":"w","target":{"adapter":"a"},"check":"live","probe_id":"probe-1"}`))
	f.Add(uint8(1), []byte(`{"probe_id":"probe-1","outcome":"passed","usage":{"known":true,"input":3}}`))
	f.Add(uint8(2), []byte(`{"reason":"interrupted"}`))
	f.Add(uint8(4), []byte(`{"lanes":{"w":{"target":{"adapter":"a"},"static":"passed"}},"blocked":[{"lane":"w"}]}`))
	f.Add(uint8(5), []byte(`null`))
	f.Fuzz(func(t *testing.T, kind uint8, data []byte) {
		fold := NewPreflightFold(&plan.Preflight{})
		_ = fold.Apply(EventProbeStarted, json.RawMessage(`{"lane":"w","check":"static","probe_id":"probe-1"}`))
		_ = fold.Apply(types[int(kind)%len(types)], json.RawMessage(data))
		_ = fold.Report()
		_, _ = fold.ReceiptFor("w", plugin.Identity{})
	})
}
