package enginetest

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/obversa/obversa/plugin"
)

var target = plugin.Identity{Adapter: "mock", Provider: "local", ModelFamily: "scripted", Model: "m1", Tools: []string{}}

// recorder collects streamed events.
type recorder struct{ events []plugin.RunEvent }

func (r *recorder) emit(ev plugin.RunEvent) error {
	r.events = append(r.events, ev)
	return nil
}

// configured returns an engine configured from a JSON literal, failing the
// test on any diagnostic.
func configured(t *testing.T, config string) *Engine {
	t.Helper()
	e := New()
	d, err := e.Configure(context.Background(), json.RawMessage(config))
	if err != nil || len(d) > 0 {
		t.Fatalf("Configure(%s) = %+v, %v", config, d, err)
	}
	return e
}

func run(t *testing.T, e *Engine, req plugin.RunRequest) (*plugin.RunResult, []plugin.RunEvent, error) {
	t.Helper()
	if req.Target.Adapter == "" {
		req.Target = target
	}
	var rec recorder
	res, err := e.Run(context.Background(), req, rec.emit)
	return res, rec.events, err
}

// checkStream asserts the streaming contract: the text deltas concatenate
// to the final text part and a usage event equals the result's usage.
func checkStream(t *testing.T, res *plugin.RunResult, events []plugin.RunEvent) {
	t.Helper()
	var text strings.Builder
	var usage []plugin.Usage
	for _, ev := range events {
		switch ev.Kind {
		case plugin.EventText:
			text.WriteString(ev.Text)
		case plugin.EventUsage:
			usage = append(usage, ev.Usage)
		default:
			t.Errorf("unexpected event %+v", ev)
		}
	}
	final, ok := res.Final()
	if !ok {
		t.Fatal("result has no final part")
	}
	if final.Kind == plugin.PartText && text.String() != final.Text {
		t.Errorf("deltas %q do not add up to final text %q", text.String(), final.Text)
	}
	if res.Usage.Known {
		if diff := cmp.Diff([]plugin.Usage{res.Usage}, usage); diff != "" {
			t.Errorf("usage events (-want +got):\n%s", diff)
		}
	} else if len(usage) > 0 {
		t.Errorf("usage events %+v for unknown usage", usage)
	}
}

func TestDescribe(t *testing.T) {
	t.Parallel()
	got, err := New().Describe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := &plugin.Description{
		Name: "mock", Version: Version, Types: []plugin.Type{plugin.TypeEngine},
		Capabilities: plugin.Capabilities{Admit: true, StructuredOutput: true, Tools: false, MaxConcurrency: 0},
		FailureKinds: plugin.FailureKinds,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Describe (-want +got):\n%s", diff)
	}
}

func TestRunWithoutConfig(t *testing.T) {
	t.Parallel()
	for _, config := range []string{"", "null", "{}", "  "} {
		e := New()
		if d, _ := e.Configure(context.Background(), json.RawMessage(config)); len(d) > 0 {
			t.Fatalf("Configure(%q) = %+v", config, d)
		}
		res, events, err := run(t, e, plugin.RunRequest{NodeID: "n", Prompt: "Write a haiku"})
		if err != nil {
			t.Fatal(err)
		}
		text := `mock answer to: "Write a haiku"`
		want := &plugin.RunResult{
			Parts:      []plugin.Part{{Kind: plugin.PartText, Text: text, Final: true}},
			Usage:      plugin.Usage{Known: true, Input: 4, Output: 8},
			Requested:  target,
			Effective:  target,
			StopReason: "end_turn",
		}
		if diff := cmp.Diff(want, res); diff != "" {
			t.Errorf("config %q: result (-want +got):\n%s", config, diff)
		}
		checkStream(t, res, events)
		if len(events) != 4 {
			t.Errorf("got %d events, want 3 text deltas and a usage event", len(events))
		}
	}
}

func TestRunResponses(t *testing.T) {
	t.Parallel()
	config := `{
		"default": {"text": "fallback answer"},
		"responses": [
			{"node": "draft", "text": "hello"},
			{"prompt_contains": "summarise", "json": {"ok": true, "n": [1, 2]}},
			{"node": "z", "text": "t", "usage": {"input": 10, "output": 20, "cache_read": 3, "cache_creation": 4}},
			{"node": "u", "text": "late", "usage": "unknown"},
			{"node": "w", "text": "t", "effective": {"provider": "other", "model": "m2"}, "stop_reason": "max_tokens"},
			{"node": "check", "position_contains": "dag/config/1/", "json": {"status": "fail"}},
			{"node": "check", "json": {"status": "pass"}},
			{"purpose": "preflight", "text": "pong"}
		]
	}`
	e := configured(t, config)
	other := target
	other.Provider, other.Model = "other", "m2"
	tests := []struct {
		name string
		req  plugin.RunRequest
		want *plugin.RunResult
	}{
		{"node rule", plugin.RunRequest{NodeID: "draft", Prompt: "p"},
			&plugin.RunResult{Parts: []plugin.Part{{Kind: plugin.PartText, Text: "hello", Final: true}},
				Usage: plugin.Usage{Known: true, Input: 1, Output: 2}, Requested: target, Effective: target, StopReason: "end_turn"}},
		{"prompt rule with structured output", plugin.RunRequest{NodeID: "other", Prompt: "please summarise this"},
			&plugin.RunResult{Parts: []plugin.Part{{Kind: plugin.PartStructured, JSON: json.RawMessage(`{"ok":true,"n":[1,2]}`), Final: true}},
				Usage: plugin.Usage{Known: true, Input: 6, Output: 6}, Requested: target, Effective: target, StopReason: "end_turn"}},
		{"first matching rule wins", plugin.RunRequest{NodeID: "draft", Prompt: "summarise"},
			&plugin.RunResult{Parts: []plugin.Part{{Kind: plugin.PartText, Text: "hello", Final: true}},
				Usage: plugin.Usage{Known: true, Input: 3, Output: 2}, Requested: target, Effective: target, StopReason: "end_turn"}},
		{"reported usage", plugin.RunRequest{NodeID: "z", Prompt: "p"},
			&plugin.RunResult{Parts: []plugin.Part{{Kind: plugin.PartText, Text: "t", Final: true}},
				Usage: plugin.Usage{Known: true, Input: 10, Output: 20, CacheRead: 3, CacheCreation: 4}, Requested: target, Effective: target, StopReason: "end_turn"}},
		{"unknown usage", plugin.RunRequest{NodeID: "u", Prompt: "p"},
			&plugin.RunResult{Parts: []plugin.Part{{Kind: plugin.PartText, Text: "late", Final: true}},
				Usage: plugin.Usage{}, Requested: target, Effective: target, StopReason: "end_turn"}},
		{"effective identity override", plugin.RunRequest{NodeID: "w", Prompt: "p"},
			&plugin.RunResult{Parts: []plugin.Part{{Kind: plugin.PartText, Text: "t", Final: true}},
				Usage: plugin.Usage{Known: true, Input: 1, Output: 1}, Requested: target, Effective: other, StopReason: "max_tokens"}},
		{"position selector: round 1", plugin.RunRequest{NodeID: "check", Position: "dag/config/1/check/2", Prompt: "p"},
			&plugin.RunResult{Parts: []plugin.Part{{Kind: plugin.PartStructured, JSON: json.RawMessage(`{"status":"fail"}`), Final: true}},
				Usage: plugin.Usage{Known: true, Input: 1, Output: 5}, Requested: target, Effective: target, StopReason: "end_turn"}},
		{"position selector: another round", plugin.RunRequest{NodeID: "check", Position: "dag/config/2/check/1", Prompt: "p"},
			&plugin.RunResult{Parts: []plugin.Part{{Kind: plugin.PartStructured, JSON: json.RawMessage(`{"status":"pass"}`), Final: true}},
				Usage: plugin.Usage{Known: true, Input: 1, Output: 5}, Requested: target, Effective: target, StopReason: "end_turn"}},
		{"purpose selector", plugin.RunRequest{Purpose: plugin.PurposePreflight, Prompt: "ping"},
			&plugin.RunResult{Parts: []plugin.Part{{Kind: plugin.PartText, Text: "pong", Final: true}},
				Usage: plugin.Usage{Known: true, Input: 1, Output: 1}, Requested: target, Effective: target, StopReason: "end_turn"}},
		{"default response", plugin.RunRequest{NodeID: "nobody", Prompt: "p"},
			&plugin.RunResult{Parts: []plugin.Part{{Kind: plugin.PartText, Text: "fallback answer", Final: true}},
				Usage: plugin.Usage{Known: true, Input: 1, Output: 4}, Requested: target, Effective: target, StopReason: "end_turn"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, events, err := run(t, e, tc.req)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, res); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
			checkStream(t, res, events)
		})
	}
}

func TestRunFailures(t *testing.T) {
	t.Parallel()
	for _, kind := range plugin.FailureKinds {
		t.Run(string(kind), func(t *testing.T) {
			t.Parallel()
			e := configured(t, `{"responses": [{"node": "x", "fail": {"kind": "`+string(kind)+`", "message": "slow down", "retry_after": "2s"}}]}`)
			res, events, err := run(t, e, plugin.RunRequest{NodeID: "x"})
			want := &plugin.Failure{Kind: kind, Message: "slow down", RetryAfter: 2 * time.Second, Provider: "local", Model: "m1"}
			var got *plugin.Failure
			if !errors.As(err, &got) {
				t.Fatalf("Run = %+v, %v; want a failure", res, err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("failure (-want +got):\n%s", diff)
			}
			if len(events) > 0 {
				t.Errorf("events before a failure: %+v", events)
			}
		})
	}
	t.Run("reported identity", func(t *testing.T) {
		t.Parallel()
		e := configured(t, `{"responses": [
			{"node": "a", "fail": {"kind": "billing"}, "effective": {"provider": "p2", "model": "m2"}},
			{"node": "b", "fail": {"kind": "quota", "provider": "p3", "model": "m3"}}]}`)
		for node, want := range map[string]*plugin.Failure{
			"a": {Kind: plugin.FailureBilling, Message: "mock billing", Provider: "p2", Model: "m2"},
			"b": {Kind: plugin.FailureQuota, Message: "mock quota", Provider: "p3", Model: "m3"},
		} {
			_, _, err := run(t, e, plugin.RunRequest{NodeID: node})
			var got *plugin.Failure
			if !errors.As(err, &got) {
				t.Fatalf("node %s: %v", node, err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("node %s failure (-want +got):\n%s", node, diff)
			}
		}
	})
}

func TestRunCallCounting(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		config string
		want   []string // per call: answer text or "fail"
	}{
		{"after_calls", `{"responses": [
			{"node": "flaky", "after_calls": 2, "text": "ok now"},
			{"node": "flaky", "fail": {"kind": "transient"}}]}`,
			[]string{"fail", "fail", "ok now", "ok now"}},
		{"calls list", `{"responses": [
			{"node": "flaky", "calls": [1, 3], "fail": {"kind": "rate_limit"}},
			{"node": "flaky", "text": "fine"}]}`,
			[]string{"fail", "fine", "fail", "fine"}},
		{"calls with after_calls", `{"responses": [
			{"node": "flaky", "calls": [1, 2, 3], "after_calls": 1, "text": "window"},
			{"node": "flaky", "text": "outside"}]}`,
			[]string{"outside", "window", "window", "outside"}},
		{"other nodes do not count", `{"responses": [
			{"node": "flaky", "after_calls": 1, "text": "second"},
			{"text": "first"}]}`,
			[]string{"first", "first", "second"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := configured(t, tc.config)
			nodes := []string{"flaky", "flaky", "flaky", "flaky"}
			if tc.name == "other nodes do not count" {
				nodes = []string{"elsewhere", "flaky", "flaky"}
			}
			var got []string
			for _, n := range nodes {
				res, _, err := run(t, e, plugin.RunRequest{NodeID: n, Prompt: "p"})
				if err != nil {
					got = append(got, "fail")
					continue
				}
				p, _ := res.Final()
				got = append(got, p.Text)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("answers (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("Configure resets counts", func(t *testing.T) {
		t.Parallel()
		config := `{"responses": [{"calls": [1], "text": "first"}]}`
		e := configured(t, config)
		for i, want := range []string{"first", `mock answer to: "p"`} {
			res, _, _ := run(t, e, plugin.RunRequest{Prompt: "p"})
			if p, _ := res.Final(); p.Text != want {
				t.Errorf("call %d = %q, want %q", i+1, p.Text, want)
			}
		}
		e.Configure(context.Background(), json.RawMessage(config))
		res, _, _ := run(t, e, plugin.RunRequest{Prompt: "p"})
		if p, _ := res.Final(); p.Text != "first" {
			t.Errorf("after Configure: %q, want first", p.Text)
		}
	})
}

func TestAdmit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		config   string
		want     *plugin.AdmitResponse
		wantFail *plugin.Failure
	}{
		{"default admits target", ``, &plugin.AdmitResponse{Supported: true, Selection: target}, nil},
		{"admit true", `{"admit": true}`, &plugin.AdmitResponse{Supported: true, Selection: target}, nil},
		{"admit false is unsupported", `{"admit": false}`, &plugin.AdmitResponse{Supported: false}, nil},
		{"typed failure", `{"admit": true, "admit_failure": {"kind": "auth", "message": "no key"}}`, nil,
			&plugin.Failure{Kind: plugin.FailureAuth, Message: "no key", Provider: "local", Model: "m1"}},
		{"failure with identity", `{"admit_failure": {"kind": "model_unavailable", "provider": "p", "model": "gone"}}`, nil,
			&plugin.Failure{Kind: plugin.FailureModelUnavailable, Message: "mock model_unavailable", Provider: "p", Model: "gone"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := New()
			if tc.config != "" {
				e = configured(t, tc.config)
			}
			got, err := e.Admit(context.Background(), plugin.AdmitRequest{Target: target})
			if tc.wantFail != nil {
				var f *plugin.Failure
				if !errors.As(err, &f) {
					t.Fatalf("Admit = %+v, %v; want failure", got, err)
				}
				if diff := cmp.Diff(tc.wantFail, f); diff != "" {
					t.Errorf("failure (-want +got):\n%s", diff)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Admit (-want +got):\n%s", diff)
			}
		})
	}
}

func TestConfigured(t *testing.T) {
	t.Parallel()
	text := "scripted"
	e, err := Configured(Config{Responses: []Rule{{Node: "a", Response: Response{Text: &text}}}})
	if err != nil {
		t.Fatal(err)
	}
	res, _, err := run(t, e, plugin.RunRequest{NodeID: "a"})
	if err != nil {
		t.Fatal(err)
	}
	if p, _ := res.Final(); p.Text != text {
		t.Errorf("text %q, want %q", p.Text, text)
	}
	if _, err := Configured(Config{Responses: []Rule{{Response: Response{Fail: &Failure{Kind: "nope"}}}}}); err == nil ||
		!strings.Contains(err.Error(), "responses[0].fail.kind") {
		t.Errorf("Configured with a bad kind: %v", err)
	}
}
