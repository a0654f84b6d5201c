package cmdengine

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

func TestEngineJSONMode(t *testing.T) {
	t.Parallel()
	fields := map[string]any{
		"text": "result", "is_error": "is_error", "error_message": "result", "model": "model",
		"usage_input": "usage.input_tokens", "usage_output": "usage.output_tokens",
		"usage_cache_read": "usage.cache_read_input_tokens", "usage_cache_creation": "usage.cache_creation_input_tokens",
	}
	e := engineWith(t, map[string]any{"command": fakeArgv("json"), "output": "json", "fields": fields,
		"failures": []map[string]any{{"stdout_matches": "rate limit", "kind": "rate_limit", "retry_after_capture": `retry after (\w+)`}}})
	effective := target
	effective.Model = "fake-model-1"
	usage := plugin.Usage{Known: true, Input: 11, Output: 22, CacheRead: 3, CacheCreation: 4}
	var rec recorder
	res, err := e.Run(context.Background(), plugin.RunRequest{Prompt: "hi", Target: target}, rec.emit)
	if err != nil {
		t.Fatal(err)
	}
	want := &plugin.RunResult{
		Parts: []plugin.Part{{Kind: plugin.PartText, Text: "answer to hi", Final: true}},
		Usage: usage, Requested: target, Effective: effective, StopReason: "end_turn",
	}
	if diff := cmp.Diff(want, res); diff != "" {
		t.Errorf("result (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]plugin.RunEvent{{Kind: plugin.EventUsage, Usage: usage}}, rec.events); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}

	for _, prompt := range []string{"ERROR", "ERROR EXIT"} {
		_, err = e.Run(context.Background(), plugin.RunRequest{Prompt: prompt, Target: target}, nil)
		f := failureOf(t, err)
		if f.Kind != plugin.FailureRateLimit || f.RetryAfter != 7*time.Second || !strings.Contains(f.Message, "rate limit reached") {
			t.Errorf("prompt %q: failure %+v, want rate_limit after 7s quoting the error", prompt, f)
		}
	}

	structured := engineWith(t, map[string]any{"command": fakeArgv("json"), "output": "json",
		"fields": map[string]any{"structured": "structured_output", "text": "result"}})
	res, err = structured.Run(context.Background(), plugin.RunRequest{Prompt: "s", Target: target}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]plugin.Part{{Kind: plugin.PartStructured, JSON: json.RawMessage(`{"echo":"s"}`), Final: true}}, res.Parts); diff != "" {
		t.Errorf("structured parts (-want +got):\n%s", diff)
	}
	if res.Usage.Known {
		t.Errorf("usage %+v known without usage fields", res.Usage)
	}

	notJSON := engineWith(t, map[string]any{"command": fakeArgv("echo"), "output": "json", "fields": fields})
	_, err = notJSON.Run(context.Background(), plugin.RunRequest{Prompt: "plain words", Target: target}, nil)
	if f := failureOf(t, err); f.Kind != plugin.FailureUnknown || !strings.Contains(f.Message, "no JSON object") {
		t.Errorf("non-JSON output: %v", f)
	}
}

func TestEngineJSONLMode(t *testing.T) {
	t.Parallel()
	e := engineWith(t, map[string]any{"command": fakeArgv("jsonl"), "output": "jsonl", "fields": map[string]any{
		"text": "result", "is_error": "is_error", "model": "model", "stop_reason": "stop_reason",
		"content": "message.content", "usage_input": "usage.input_tokens", "usage_output": "usage.output_tokens",
	}})
	var rec recorder
	res, err := e.Run(context.Background(), plugin.RunRequest{Prompt: "q", Target: target}, rec.emit)
	if err != nil {
		t.Fatal(err)
	}
	usage := plugin.Usage{Known: true, Input: 5, Output: 6}
	wantEvents := []plugin.RunEvent{
		{Kind: plugin.EventThinking, Text: "hmm"},
		{Kind: plugin.EventToolUse, ToolName: "Read", ToolID: "t1", ToolJSON: json.RawMessage(`{"path":"a.go"}`)},
		{Kind: plugin.EventToolResult, ToolID: "t1", ToolJSON: json.RawMessage(`"package a"`)},
		{Kind: plugin.EventText, Text: "final: q"},
		{Kind: plugin.EventUsage, Usage: usage},
	}
	if diff := cmp.Diff(wantEvents, rec.events); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	effective := target
	effective.Model = "fake-stream-model"
	want := &plugin.RunResult{
		Parts: []plugin.Part{
			{Kind: plugin.PartThinking, Text: "hmm"},
			{Kind: plugin.PartToolUse, ToolName: "Read", ToolID: "t1", JSON: json.RawMessage(`{"path":"a.go"}`)},
			{Kind: plugin.PartToolResult, ToolID: "t1", JSON: json.RawMessage(`"package a"`)},
			{Kind: plugin.PartText, Text: "final: q", Final: true},
		},
		Usage: usage, Requested: target, Effective: effective, StopReason: "end_turn",
	}
	if diff := cmp.Diff(want, res); diff != "" {
		t.Errorf("result (-want +got):\n%s", diff)
	}

	t.Run("text deltas", func(t *testing.T) {
		e := engineWith(t, map[string]any{"command": fakeArgv("jsonl", "partial"), "output": "jsonl", "fields": map[string]any{
			"text": "result", "content": "message.content", "text_delta": "event.delta.text"}})
		var rec recorder
		res, err := e.Run(context.Background(), plugin.RunRequest{Prompt: "q", Target: target}, rec.emit)
		if err != nil {
			t.Fatal(err)
		}
		var texts []string
		for _, ev := range rec.events {
			if ev.Kind == plugin.EventText {
				texts = append(texts, ev.Text)
			}
		}
		if diff := cmp.Diff([]string{"fin", "al: ", "q"}, texts); diff != "" {
			t.Errorf("text events (-want +got):\n%s", diff)
		}
		if final, _ := res.Final(); final.Text != "final: q" {
			t.Errorf("final %q", final.Text)
		}
	})
	t.Run("emitter error aborts", func(t *testing.T) {
		_, err := e.Run(context.Background(), plugin.RunRequest{Prompt: "q", Target: target},
			func(plugin.RunEvent) error { return errors.New("host gone") })
		if f := failureOf(t, err); f.Kind != plugin.FailureAborted {
			t.Errorf("kind %s, want aborted", f.Kind)
		}
	})
	t.Run("no result line", func(t *testing.T) {
		e := engineWith(t, map[string]any{"command": fakeArgv("echo"), "output": "jsonl", "fields": map[string]any{"text": "result"}})
		_, err := e.Run(context.Background(), plugin.RunRequest{Prompt: `{"type":"noise"}`, Target: target}, nil)
		if f := failureOf(t, err); f.Kind != plugin.FailureUnknown || !strings.Contains(f.Message, "no answer") {
			t.Errorf("failure %v", f)
		}
	})
}
