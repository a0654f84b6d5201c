package enginetest

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/obversa/obversa/plugin"
)

func TestConfigDiagnostics(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		config string
		want   []plugin.Diagnostic // Summary compared by prefix
	}{
		{"not an object", `[1]`, []plugin.Diagnostic{{Summary: "mock engine config must be an object"}}},
		{"invalid JSON", `{"admit": }`, []plugin.Diagnostic{{Summary: "mock engine config is not valid JSON"}}},
		{"unknown top-level key", `{"efects_file": "x"}`, []plugin.Diagnostic{{Attribute: "efects_file", Summary: `unknown mock engine config setting "efects_file"`}}},
		{"unknown nested key", `{"responses": [{"text": "a"}, {"fail": {"kind": "auth", "mesage": "x"}}]}`,
			[]plugin.Diagnostic{{Attribute: "responses[1].fail.mesage", Summary: "unknown mock engine config setting"}}},
		{"wrong type", `{"admit": "yes"}`, []plugin.Diagnostic{{Attribute: "admit", Summary: "expected true or false"}}},
		{"wrong nested type", `{"responses": [{"calls": ["1"]}]}`, []plugin.Diagnostic{{Attribute: "responses[0].calls[0]", Summary: "expected a whole number"}}},
		{"bad failure kind", `{"responses": [{"fail": {"kind": "ratelimit"}}]}`,
			[]plugin.Diagnostic{{Attribute: "responses[0].fail.kind", Summary: `unknown failure kind "ratelimit"`}}},
		{"missing failure kind", `{"admit_failure": {"message": "x"}}`,
			[]plugin.Diagnostic{{Attribute: "admit_failure.kind", Summary: `unknown failure kind ""`}}},
		{"bad retry_after", `{"responses": [{"fail": {"kind": "rate_limit", "retry_after": "soon"}}]}`,
			[]plugin.Diagnostic{{Attribute: "responses[0].fail.retry_after", Summary: `"soon" is not a non-negative duration`}}},
		{"negative delay", `{"default": {"delay": "-1s"}}`, []plugin.Diagnostic{{Attribute: "default.delay", Summary: `"-1s" is not`}}},
		{"bad stream interval", `{"default": {"stream_interval": "soon"}}`, []plugin.Diagnostic{{Attribute: "default.stream_interval", Summary: `"soon" is not`}}},
		{"two outputs", `{"responses": [{"text": "a", "json": {}}]}`, []plugin.Diagnostic{{Attribute: "responses[0]", Summary: "set at most one of text, json and fail"}}},
		{"bad usage word", `{"responses": [{"usage": "none"}]}`, []plugin.Diagnostic{{Attribute: "responses[0].usage", Summary: `usage must be "unknown"`}}},
		{"bad usage key", `{"responses": [{"usage": {"inputs": 1}}]}`, []plugin.Diagnostic{{Attribute: "responses[0].usage", Summary: `usage must be "unknown" or {input`}}},
		{"negative usage", `{"responses": [{"usage": {"input": -1}}]}`, []plugin.Diagnostic{{Attribute: "responses[0].usage", Summary: "token counts must not be negative"}}},
		{"bad purpose", `{"responses": [{"purpose": "live"}]}`, []plugin.Diagnostic{{Attribute: "responses[0].purpose", Summary: "purpose must be"}}},
		{"bad calls", `{"responses": [{"calls": [0, 2], "after_calls": -1}]}`, []plugin.Diagnostic{
			{Attribute: "responses[0].after_calls", Summary: "after_calls must not be negative"},
			{Attribute: "responses[0].calls[0]", Summary: "call numbers start at 1"},
		}},
		{"valid full config", `{
			"effects_file": "/tmp/e", "calls_log": "/tmp/c", "ready_file": "/tmp/r", "admit": true,
			"admit_failure": {"kind": "auth", "message": "m"},
			"default": {"text": "d", "usage": "unknown"},
			"responses": [
				{"node": "x", "fail": {"kind": "rate_limit", "message": "slow down", "retry_after": "2s"}},
				{"node": "y", "delay": "500ms", "text": "late", "usage": "unknown"},
				{"node": "z", "text": "t", "usage": {"input": 10, "output": 20, "cache_read": 0, "cache_creation": 0}},
				{"node": "w", "text": "t", "effective": {"provider": "other", "model": "m2"}},
				{"prompt_contains": "summarise", "json": {"ok": true}, "calls": [1, 2], "after_calls": 0, "purpose": "ordinary"},
				{"Node": "case-insensitive like encoding/json", "json": null}
			]}`, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, got := DecodeConfig(json.RawMessage(tc.config))
			for i := range got {
				if i < len(tc.want) && strings.HasPrefix(got[i].Summary, tc.want[i].Summary) {
					got[i].Summary = tc.want[i].Summary
				}
			}
			want := tc.want
			for i := range want {
				want[i].Severity = plugin.SeverityError
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("diagnostics (-want +got):\n%s", diff)
			}
		})
	}
}

func TestConfigureKeepsPreviousConfigOnError(t *testing.T) {
	t.Parallel()
	e := configured(t, `{"default": {"text": "first"}}`)
	d, err := e.Configure(context.Background(), json.RawMessage(`{"default": {"text": 1}}`))
	if err != nil || len(d) != 1 || d[0].Severity != plugin.SeverityError {
		t.Fatalf("Configure(bad) = %+v, %v", d, err)
	}
	res, _, err := run(t, e, plugin.RunRequest{Prompt: "p"})
	if err != nil {
		t.Fatal(err)
	}
	if p, _ := res.Final(); p.Text != "first" {
		t.Errorf("text %q, want the previous config's %q", p.Text, "first")
	}
}

func TestConfigRoundTrip(t *testing.T) {
	t.Parallel()
	raw := `{"effects_file":"/e","admit":false,"responses":[{"node":"a","calls":[2],"text":"x","usage":"unknown","effective":{"model":"m2"}}]}`
	cfg, d := DecodeConfig(json.RawMessage(raw))
	if len(d) > 0 {
		t.Fatal(d)
	}
	again, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(raw, string(again)); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}

func FuzzDecodeConfig(f *testing.F) {
	seeds := []string{
		``, `null`, `{}`, `[]`, `"x"`,
		`{"responses": [{"node": "x", "fail": {"kind": "rate_limit", "retry_after": "2s"}}]}`,
		`{"responses": [{"usage": {"input": 1}}, {"usage": "unknown"}, {"json": [1, {"a": null}]}]}`,
		`{"default": {"delay": "1ms", "effective": {"tools": ["a"]}}, "admit": false}`,
		`{"responses": [{"calls": [1, 2], "after_calls": 3, "purpose": "preflight"}]}`,
		`{"admit_failure": {"kind": "auth"}, "unknown": {"deep": [1]}}`,
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		cfg, d := DecodeConfig(raw)
		for _, x := range d {
			if x.Summary == "" || x.Severity != plugin.SeverityError {
				t.Errorf("malformed diagnostic %+v", x)
			}
		}
		e := New()
		if d2, err := e.Configure(context.Background(), raw); err != nil || len(d2) != len(d) {
			t.Fatalf("Configure = %+v, %v; DecodeConfig gave %+v", d2, err, d)
		}
		if len(d) > 0 {
			return
		}
		// An accepted config must survive re-encoding and answer calls
		// without panicking.
		again, err := json.Marshal(cfg)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		if _, d := DecodeConfig(again); len(d) > 0 {
			t.Fatalf("re-encoded config %s rejected: %+v", again, d)
		}
		cfg.EffectsFile, cfg.CallsLog, cfg.ReadyFile = "", "", ""
		for i := range cfg.Responses {
			cfg.Responses[i].Delay, cfg.Responses[i].StreamInterval = "", ""
		}
		if cfg.Default != nil {
			cfg.Default.Delay, cfg.Default.StreamInterval = "", ""
		}
		e2, err := Configured(cfg)
		if err != nil {
			t.Fatalf("Configured: %v", err)
		}
		_, _ = e2.Run(context.Background(), plugin.RunRequest{NodeID: "x", Prompt: "p", Target: target}, nil)
		_, _ = e2.Admit(context.Background(), plugin.AdmitRequest{Target: target})
	})
}
