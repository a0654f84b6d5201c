package enginetest

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

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

func TestRunDelayAndContext(t *testing.T) {
	t.Parallel()
	e := configured(t, `{"responses": [{"node": "slow", "delay": "10s", "text": "late"}, {"node": "quick", "delay": "30ms", "text": "late"}]}`)
	t.Run("delay elapses", func(t *testing.T) {
		t.Parallel()
		begin := time.Now()
		res, _, err := run(t, e, plugin.RunRequest{NodeID: "quick"})
		if err != nil {
			t.Fatal(err)
		}
		if el := time.Since(begin); el < 30*time.Millisecond {
			t.Errorf("answered after %v, before the 30ms delay", el)
		}
		if p, _ := res.Final(); p.Text != "late" {
			t.Errorf("text %q", p.Text)
		}
	})
	tests := []struct {
		name string
		ctx  func() (context.Context, context.CancelFunc)
		kind plugin.FailureKind
	}{
		{"cancelled", func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(20*time.Millisecond, cancel)
			return ctx, cancel
		}, plugin.FailureAborted},
		{"deadline", func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 20*time.Millisecond)
		}, plugin.FailureTimeout},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := tc.ctx()
			defer cancel()
			begin := time.Now()
			_, err := e.Run(ctx, plugin.RunRequest{NodeID: "slow", Target: target}, nil)
			var f *plugin.Failure
			if !errors.As(err, &f) || f.Kind != tc.kind {
				t.Fatalf("Run error = %v, want %s failure", err, tc.kind)
			}
			if el := time.Since(begin); el > time.Second {
				t.Errorf("stopped after %v", el)
			}
		})
	}
	t.Run("emitter error", func(t *testing.T) {
		t.Parallel()
		_, err := e.Run(context.Background(), plugin.RunRequest{NodeID: "n", Prompt: "p", Target: target},
			func(plugin.RunEvent) error { return errors.New("host gone") })
		var f *plugin.Failure
		if !errors.As(err, &f) || f.Kind != plugin.FailureAborted {
			t.Fatalf("Run error = %v, want aborted failure", err)
		}
	})
}

func TestLogsAndReadiness(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	effects := filepath.Join(dir, "effects.log")
	calls := filepath.Join(dir, "calls.log")
	ready := filepath.Join(dir, "ready")
	cfg, _ := json.Marshal(Config{EffectsFile: effects, CallsLog: calls, ReadyFile: ready})
	e := configured(t, string(cfg))
	ctx := context.Background()
	preflight := plugin.RunRequest{Purpose: plugin.PurposePreflight, Prompt: "ping", Target: target}

	if _, err := e.Admit(ctx, plugin.AdmitRequest{Target: target}); err != nil {
		t.Fatal(err)
	}
	_, err := e.Run(ctx, preflight, nil)
	var f *plugin.Failure
	if !errors.As(err, &f) || f.Kind != plugin.FailureTransient || f.Message != "not ready" {
		t.Fatalf("preflight without ready file = %v, want transient not ready", err)
	}
	if err := os.WriteFile(ready, []byte("not yet\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Run(ctx, preflight, nil); err == nil {
		t.Fatal("preflight with content \"not yet\" succeeded")
	}
	if err := os.WriteFile(ready, []byte(" ready\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Run(ctx, preflight, nil); err != nil {
		t.Fatalf("preflight when ready: %v", err)
	}
	if _, err := e.Run(ctx, plugin.RunRequest{NodeID: "draft", Position: "dag/draft/1", AttemptID: "sha256:aa", Target: target}, nil); err != nil {
		t.Fatal(err)
	}
	read := func(p string) string {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	wantEffects := "- - - preflight\n- - - preflight\n- - - preflight\ndraft dag/draft/1 sha256:aa ordinary\n"
	if diff := cmp.Diff(wantEffects, read(effects)); diff != "" {
		t.Errorf("effects file (-want +got):\n%s", diff)
	}
	wantCalls := "static\nlive:not-ready\nlive:not-ready\nlive:ready\nordinary\n"
	if diff := cmp.Diff(wantCalls, read(calls)); diff != "" {
		t.Errorf("calls log (-want +got):\n%s", diff)
	}
}

func TestLogWriteFailure(t *testing.T) {
	t.Parallel()
	cfg, _ := json.Marshal(Config{EffectsFile: filepath.Join(t.TempDir(), "missing", "effects.log")})
	e := configured(t, string(cfg))
	_, _, err := run(t, e, plugin.RunRequest{Prompt: "p"})
	var f *plugin.Failure
	if !errors.As(err, &f) || f.Kind != plugin.FailureUnknown {
		t.Fatalf("Run = %v, want unknown failure", err)
	}
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

func TestSplitText(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "a", "ab", "abc", "héllo wörld ✓", strings.Repeat("x", 100)} {
		parts := splitText(s, 3)
		if strings.Join(parts, "") != s || len(parts) > 3 {
			t.Errorf("splitText(%q) = %q", s, parts)
		}
		for _, p := range parts {
			if p == "" || !utf8.ValidString(p) {
				t.Errorf("splitText(%q) has piece %q", s, p)
			}
		}
	}
}

// TestRunStreamInterval: with stream_interval a text of several lines is
// streamed one line per delta, each after the interval, and the deltas
// still make up the final text.
func TestRunStreamInterval(t *testing.T) {
	t.Parallel()
	e := configured(t, `{"default": {"text": "one\ntwo\nthree", "stream_interval": "20ms"}}`)
	begin := time.Now()
	res, events, err := run(t, e, plugin.RunRequest{Prompt: "p"})
	if err != nil {
		t.Fatal(err)
	}
	if el := time.Since(begin); el < 40*time.Millisecond {
		t.Errorf("answered after %v, before two intervals", el)
	}
	var deltas []string
	for _, ev := range events {
		if ev.Kind == plugin.EventText {
			deltas = append(deltas, ev.Text)
		}
	}
	if want := []string{"one\n", "two\n", "three"}; !cmp.Equal(deltas, want) {
		t.Errorf("deltas %q, want %q", deltas, want)
	}
	checkStream(t, res, events)
}
