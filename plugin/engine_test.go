package plugin_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/obversa/obversa/plugin"
)

func TestEngineDescribe(t *testing.T) {
	t.Parallel()
	e := launchEngine(t)
	got, err := e.Describe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(&fakeDescription, got); diff != "" {
		t.Errorf("Describe (-want +got):\n%s", diff)
	}
}

func TestEngineConfigure(t *testing.T) {
	t.Parallel()
	e := launchEngine(t)
	diags := []plugin.Diagnostic{
		{Severity: plugin.SeverityError, Summary: "bad command", Detail: "no such file", Attribute: "command"},
		{Severity: plugin.SeverityWarning, Summary: "deprecated"},
	}
	cfg, err := json.Marshal(map[string]any{"diags": diags})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		config json.RawMessage
		want   []plugin.Diagnostic
	}{
		{name: "absent", config: nil, want: nil},
		{name: "clean", config: json.RawMessage(`{}`), want: nil},
		{name: "diagnostics", config: cfg, want: diags},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := e.Configure(context.Background(), tt.config)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Configure (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEngineAdmit(t *testing.T) {
	t.Parallel()
	e := launchEngine(t)
	target := plugin.Identity{Adapter: "fake", ModelFamily: "f", Model: "ok", Tools: []string{"read"}}
	got, err := e.Admit(context.Background(), plugin.AdmitRequest{Target: target})
	if err != nil {
		t.Fatal(err)
	}
	wantSel := target
	wantSel.Provider = "fake-provider"
	if diff := cmp.Diff(&plugin.AdmitResponse{Supported: true, Selection: wantSel}, got); diff != "" {
		t.Errorf("supported (-want +got):\n%s", diff)
	}

	got, err = e.Admit(context.Background(), plugin.AdmitRequest{Target: plugin.Identity{Model: "static-unknown"}})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(&plugin.AdmitResponse{Reason: "no static check"}, got); diff != "" {
		t.Errorf("unsupported (-want +got):\n%s", diff)
	}
}

func TestEngineRunStreamsEventsAndResult(t *testing.T) {
	t.Parallel()
	e := launchEngine(t)
	var events []plugin.RunEvent
	target := plugin.Identity{Adapter: "fake", Provider: "p", Model: "m"}
	res, err := e.Run(context.Background(), plugin.RunRequest{Prompt: "hello", Target: target}, func(ev plugin.RunEvent) error {
		events = append(events, ev)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	wantEvents := []plugin.RunEvent{
		{Kind: plugin.EventThinking, Text: "hmm"},
		{Kind: plugin.EventToolUse, ToolName: "read", ToolID: "t1", ToolJSON: json.RawMessage(`{"path":"a"}`)},
		{Kind: plugin.EventToolResult, ToolName: "read", ToolID: "t1", ToolJSON: json.RawMessage(`"contents"`)},
		{Kind: plugin.EventText, Text: "hel"},
		{Kind: plugin.EventText, Text: "lo"},
		{Kind: plugin.EventUsage, Usage: plugin.Usage{Known: true, Input: 10, Output: 20}},
	}
	if diff := cmp.Diff(wantEvents, events); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	want := &plugin.RunResult{
		Parts: []plugin.Part{
			{Kind: plugin.PartThinking, Text: "hmm"},
			{Kind: plugin.PartToolUse, ToolName: "read", ToolID: "t1", JSON: json.RawMessage(`{"path":"a"}`)},
			{Kind: plugin.PartText, Text: "hello", Final: true},
		},
		Usage:      plugin.Usage{Known: true, Input: 10, Output: 20, CacheRead: 3, CacheCreation: 4},
		Requested:  target,
		Effective:  plugin.Identity{Adapter: "fake", Provider: "fake-provider", Model: "m1"},
		StopReason: "end_turn",
	}
	if diff := cmp.Diff(want, res); diff != "" {
		t.Errorf("result (-want +got):\n%s", diff)
	}
}

func TestEngineRunUnknownUsageStaysUnknown(t *testing.T) {
	t.Parallel()
	e := launchEngine(t)
	res, err := e.Run(context.Background(), plugin.RunRequest{Prompt: "unknown-usage"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Usage != (plugin.Usage{}) {
		t.Errorf("usage = %+v, want unknown", res.Usage)
	}
	final, ok := res.Final()
	if diff := cmp.Diff(plugin.Part{Kind: plugin.PartStructured, JSON: json.RawMessage(`{"a":1}`), Final: true}, final); !ok || diff != "" {
		t.Errorf("final part (-want +got):\n%s", diff)
	}
}

func TestEngineRunRequestRoundTrips(t *testing.T) {
	t.Parallel()
	e := launchEngine(t)
	req := plugin.RunRequest{
		Purpose:       plugin.PurposePreflight,
		RunID:         "run-1",
		NodeID:        "draft",
		Position:      "dag/draft/1",
		AttemptID:     "sha256:abc",
		Target:        plugin.Identity{Adapter: "fake", Provider: "p", ModelFamily: "f", Model: "m", Tools: []string{"a", "b"}},
		Prompt:        "request",
		OutputSchema:  json.RawMessage(`{"type":"object"}`),
		Tools:         []string{"a"},
		WorkspaceDir:  "/tmp/ws",
		WorkspaceMode: "git",
		Timeout:       90 * time.Second,
	}
	res, err := e.Run(context.Background(), req, nil)
	if err != nil {
		t.Fatal(err)
	}
	final, _ := res.Final()
	var got plugin.RunRequest
	if err := json.Unmarshal(final.JSON, &got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(req, got); diff != "" {
		t.Errorf("request seen by the plugin (-want +got):\n%s", diff)
	}

	// With no Timeout, the context's deadline is sent.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req.Timeout = 0
	res, err = e.Run(ctx, req, nil)
	if err != nil {
		t.Fatal(err)
	}
	final, _ = res.Final()
	if err := json.Unmarshal(final.JSON, &got); err != nil {
		t.Fatal(err)
	}
	if got.Timeout <= 50*time.Second || got.Timeout > time.Minute {
		t.Errorf("timeout seen by the plugin = %s, want about 1m from the context deadline", got.Timeout)
	}
}

// callPaths returns e (from Client.Engine) by the way it makes Run calls:
// on the plugin's Attempts stream ("stream") and as a Run RPC each
// ("per-call").
func callPaths(e plugin.Engine) map[string]plugin.Engine {
	return map[string]plugin.Engine{"stream": e, "per-call": plugin.RunPerCall(e)}
}
