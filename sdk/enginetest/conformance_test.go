package enginetest

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/obversa/obversa/plugin"
)

func TestScenarios(t *testing.T) {
	t.Parallel()
	e := New()
	kinds, err := e.Scenarios(context.Background())
	if diff := cmp.Diff(plugin.ScenarioKinds, kinds); err != nil || diff != "" {
		t.Fatalf("Scenarios: %v (-want +got):\n%s", err, diff)
	}
	tests := []struct {
		name     string
		scenario plugin.Scenario
		check    func(t *testing.T, res *plugin.RunResult, events []plugin.RunEvent, err error)
	}{
		{"failure", plugin.Scenario{Kind: plugin.ScenarioFailure, Failure: plugin.FailureRateLimit},
			func(t *testing.T, _ *plugin.RunResult, _ []plugin.RunEvent, err error) {
				var f *plugin.Failure
				if !errors.As(err, &f) || f.Kind != plugin.FailureRateLimit || f.RetryAfter != time.Second || f.Model != "m1" {
					t.Errorf("err %v, want a rate_limit failure with a 1 s hint for m1", err)
				}
			}},
		{"delay", plugin.Scenario{Kind: plugin.ScenarioDelay, Delay: time.Millisecond},
			func(t *testing.T, res *plugin.RunResult, events []plugin.RunEvent, err error) {
				if err != nil || res.Validate() != nil || events[0].Text != "waiting" {
					t.Errorf("res %+v, events %+v, err %v", res, events, err)
				}
			}},
		{"unknown usage", plugin.Scenario{Kind: plugin.ScenarioUnknownUsage},
			func(t *testing.T, res *plugin.RunResult, events []plugin.RunEvent, err error) {
				if err != nil || res.Usage.Known || res.Validate() != nil {
					t.Errorf("res %+v, err %v", res, err)
				}
				for _, ev := range events {
					if ev.Kind == plugin.EventUsage {
						t.Errorf("usage event %+v with unknown usage", ev)
					}
				}
			}},
		{"tool events", plugin.Scenario{Kind: plugin.ScenarioToolEvents},
			func(t *testing.T, res *plugin.RunResult, events []plugin.RunEvent, err error) {
				if err != nil || res.Validate() != nil {
					t.Fatalf("res %+v, err %v", res, err)
				}
				var kinds []string
				for _, p := range res.Parts {
					kinds = append(kinds, string(p.Kind))
				}
				if diff := cmp.Diff([]string{"tool_use", "tool_result", "text"}, kinds); diff != "" {
					t.Errorf("parts (-want +got):\n%s", diff)
				}
				if events[0].Kind != plugin.EventToolUse || events[1].Kind != plugin.EventToolResult {
					t.Errorf("events %+v", events)
				}
			}},
		{"late final", plugin.Scenario{Kind: plugin.ScenarioLateFinal},
			func(t *testing.T, res *plugin.RunResult, _ []plugin.RunEvent, err error) {
				if f, ok := res.Final(); err != nil || !ok || f.Text == "" {
					t.Errorf("res %+v, err %v", res, err)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := e.Arm(context.Background(), tt.name, tt.scenario); err != nil {
				t.Fatal(err)
			}
			res, events, err := run(t, e, plugin.RunRequest{AttemptID: tt.name, Prompt: "p"})
			tt.check(t, res, events, err)
			// The arming is consumed: the next Run is ordinary.
			if res, _, err := run(t, e, plugin.RunRequest{AttemptID: tt.name, Prompt: "p"}); err != nil || res.Validate() != nil {
				t.Errorf("second Run: %+v, %v", res, err)
			}
		})
	}
	if n, err := e.ModelCalls(context.Background()); err != nil || n != int64(2*len(tests)) {
		t.Errorf("ModelCalls = %d, %v; want %d", n, err, 2*len(tests))
	}
	if _, err := e.Admit(context.Background(), plugin.AdmitRequest{Target: target}); err != nil {
		t.Fatal(err)
	}
	if n, _ := e.ModelCalls(context.Background()); n != int64(2*len(tests)) {
		t.Errorf("Admit counted as a model call: %d", n)
	}
}

func TestScenarioPanicAndCancel(t *testing.T) {
	t.Parallel()
	e := New()
	ctx := context.Background()
	if err := e.Arm(ctx, "p", plugin.Scenario{Kind: plugin.ScenarioPanic}); err != nil {
		t.Fatal(err)
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("the panic scenario did not panic")
			}
		}()
		_, _, _ = run(t, e, plugin.RunRequest{AttemptID: "p"})
	}()
	if err := e.Arm(ctx, "d", plugin.Scenario{Kind: plugin.ScenarioDelay}); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	emit := func(plugin.RunEvent) error { cancel(); return nil }
	_, err := e.Run(cctx, plugin.RunRequest{AttemptID: "d", Target: target}, emit)
	var f *plugin.Failure
	if !errors.As(err, &f) || f.Kind != plugin.FailureAborted {
		t.Errorf("cancelled delay: %v, want aborted", err)
	}
	for _, bad := range []plugin.Scenario{{Kind: "explode"}, {Kind: plugin.ScenarioFailure, Failure: "oops"}} {
		if err := e.Arm(ctx, "x", bad); !errors.As(err, &f) || f.Kind != plugin.FailureInvalidConfig {
			t.Errorf("Arm(%+v) = %v, want invalid_config", bad, err)
		}
	}
}

func TestStructuredWhenAsked(t *testing.T) {
	t.Parallel()
	schema := json.RawMessage(`{"type":"object"}`)
	e := New()
	res, events, err := run(t, e, plugin.RunRequest{Prompt: "hi", OutputSchema: schema})
	if err != nil {
		t.Fatal(err)
	}
	want := plugin.Part{Kind: plugin.PartStructured, JSON: json.RawMessage(`{"answer":"mock answer to: \"hi\""}`), Final: true}
	if diff := cmp.Diff([]plugin.Part{want}, res.Parts); diff != "" {
		t.Errorf("parts (-want +got):\n%s", diff)
	}
	for _, ev := range events {
		if ev.Kind == plugin.EventText {
			t.Errorf("text delta %q streamed for a structured answer", ev.Text)
		}
	}
	// A scripted json answer is kept as it is.
	e = configured(t, `{"default": {"json": [1, 2]}}`)
	res, _, err = run(t, e, plugin.RunRequest{Prompt: "hi", OutputSchema: schema})
	if f, _ := res.Final(); err != nil || string(f.JSON) != "[1,2]" {
		t.Errorf("scripted json: %+v, %v", res, err)
	}
}
