package cmdengine

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/obversa/obversa/plugin"
)

func TestEngineConfigDiagnostics(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		config string
		want   []plugin.Diagnostic // Summary compared by prefix
	}{
		{"absent", ``, []plugin.Diagnostic{{Summary: "cmd engine config must be an object"}}},
		{"no command", `{}`, []plugin.Diagnostic{{Attribute: "command", Summary: "command is required"}}},
		{"placeholder executable", `{"command": ["{model}"]}`, []plugin.Diagnostic{{Attribute: "command[0]", Summary: "the executable may not contain placeholders"}}},
		{"unknown key", `{"command": ["x"], "fields": {"txt": "result"}}`, []plugin.Diagnostic{{Attribute: "fields.txt", Summary: `unknown cmd engine config setting "fields.txt"`}}},
		{"wrong type", `{"command": "claude -p"}`, []plugin.Diagnostic{{Attribute: "command", Summary: "expected a list"}}},
		{"wrong element type", `{"command": ["x"], "failures": [{"kind": "auth", "exit_code": "2"}]}`,
			[]plugin.Diagnostic{{Attribute: "failures[0].exit_code", Summary: "expected a whole number"}}},
		{"bad prompt_via", `{"command": ["x"], "prompt_via": "pipe"}`, []plugin.Diagnostic{{Attribute: "prompt_via", Summary: "prompt_via must be"}}},
		{"file without placeholder", `{"command": ["x"], "prompt_via": "file"}`, []plugin.Diagnostic{{Attribute: "prompt_via", Summary: `prompt_via = "file" needs {prompt_file}`}}},
		{"bad output", `{"command": ["x"], "output": "xml"}`, []plugin.Diagnostic{{Attribute: "output", Summary: "output must be"}}},
		{"json without fields", `{"command": ["x"], "output": "json"}`, []plugin.Diagnostic{{Attribute: "fields", Summary: `output = "json" needs`}}},
		{"jsonl without fields", `{"command": ["x"], "output": "jsonl"}`, []plugin.Diagnostic{{Attribute: "fields", Summary: `output = "jsonl" needs`}}},
		{"bad durations", `{"command": ["x"], "timeout": "0s", "teardown_grace": "later"}`, []plugin.Diagnostic{
			{Attribute: "timeout", Summary: `"0s" is not a positive duration`},
			{Attribute: "teardown_grace", Summary: `"later" is not a positive duration`},
		}},
		{"bad limits", `{"command": ["x"], "max_output_bytes": -1, "max_memory_bytes": -1}`, []plugin.Diagnostic{
			{Attribute: "max_output_bytes", Summary: "max_output_bytes must be positive"},
			{Attribute: "max_memory_bytes", Summary: "max_memory_bytes must not be negative"},
		}},
		{"bad env names", `{"command": ["x"], "env": ["A=B"], "secrets_from_env": [""]}`, []plugin.Diagnostic{
			{Attribute: "env[0]", Summary: `"A=B" is not an environment variable name`},
			{Attribute: "secrets_from_env[0]", Summary: `"" is not an environment variable name`},
		}},
		{"bad rules", `{"command": ["x"], "failures": [{"kind": "ratelimit"}, {"kind": "auth", "stderr_matches": "(", "retry_after_capture": "["}]}`, []plugin.Diagnostic{
			{Attribute: "failures[0].kind", Summary: `unknown failure kind "ratelimit"`},
			{Attribute: "failures[1].stderr_matches", Summary: "not a valid regular expression"},
			{Attribute: "failures[1].retry_after_capture", Summary: "not a valid regular expression"},
		}},
		{"valid", `{"command": ["claude", "-p", "--model", "{model}"], "prompt_via": "stdin", "output": "json",
			"fields": {"text": "result", "usage_input": "usage.input_tokens"},
			"failures": [{"exit_code": 2, "stderr_matches": "(?i)rate limit", "kind": "rate_limit", "retry_after_capture": "retry after (\\d+)s"}],
			"timeout": "10m", "max_output_bytes": 10485760, "secrets_from_env": ["ANTHROPIC_API_KEY"], "env": ["ANTHROPIC_API_KEY"]}`, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, got := decodeEngineConfig(json.RawMessage(tc.config))
			compareDiags(t, tc.want, got)
		})
	}
}

func TestNodeConfigDiagnostics(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		config string
		want   []plugin.Diagnostic
	}{
		{"absent", ``, nil},
		{"null", `null`, nil},
		{"valid", `{"max_output_bytes": 2048, "timeout": "1m", "env": ["GOPATH"], "secrets_from_env": ["TOKEN"]}`, nil},
		{"not an object", `[]`, []plugin.Diagnostic{{Summary: "cmd node config must be an object"}}},
		{"unknown key", `{"max_output": 1}`, []plugin.Diagnostic{{Attribute: "max_output", Summary: "unknown cmd node config setting"}}},
		{"bad values", `{"max_output_bytes": -5, "timeout": "x"}`, []plugin.Diagnostic{
			{Attribute: "max_output_bytes", Summary: "max_output_bytes must be positive"},
			{Attribute: "timeout", Summary: `"x" is not a positive duration`},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, got := decodeNodeConfig(json.RawMessage(tc.config))
			compareDiags(t, tc.want, got)
		})
	}
}

// compareDiags compares diagnostics, Summary by prefix.
func compareDiags(t *testing.T, want, got []plugin.Diagnostic) {
	t.Helper()
	got = append([]plugin.Diagnostic(nil), got...)
	for i := range got {
		if i < len(want) && strings.HasPrefix(got[i].Summary, want[i].Summary) {
			got[i].Summary = want[i].Summary
		}
	}
	want = append([]plugin.Diagnostic(nil), want...)
	for i := range want {
		want[i].Severity = plugin.SeverityError
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("diagnostics (-want +got):\n%s", diff)
	}
}

func TestConfigureKeepsPreviousConfig(t *testing.T) {
	t.Parallel()
	e := engineWith(t, map[string]any{"command": fakeArgv("echo")})
	if d, _ := e.Configure(context.Background(), json.RawMessage(`{"command": []}`)); len(d) == 0 {
		t.Fatal("bad config accepted")
	}
	res, err := e.Run(context.Background(), plugin.RunRequest{Prompt: "still here", Target: target}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p, _ := res.Final(); p.Text != "still here" {
		t.Errorf("text %q", p.Text)
	}
}

func TestLookup(t *testing.T) {
	t.Parallel()
	v, err := decodeJSON([]byte(`{"a": {"b": [10, {"c": "x"}]}, "n": 12345678901234567890, "f": 2.0, "neg": -1}`))
	if err != nil {
		t.Fatal(err)
	}
	if s, ok := lookupString(v, "a.b.1.c"); !ok || s != "x" {
		t.Errorf("a.b.1.c = %q, %v", s, ok)
	}
	for _, p := range []string{"", "a.b.2", "a.b.x", "a.b.-1", "a.b.0.c", "z"} {
		if _, ok := lookup(v, p); ok {
			t.Errorf("lookup(%q) found something", p)
		}
	}
	tests := []struct {
		path string
		want int64
		ok   bool
	}{{"a.b.0", 10, true}, {"f", 2, true}, {"n", 0, false}, {"neg", 0, false}, {"a", 0, false}}
	for _, tc := range tests {
		if got, ok := lookupInt(v, tc.path); got != tc.want || ok != tc.ok {
			t.Errorf("lookupInt(%q) = %d, %v; want %d, %v", tc.path, got, ok, tc.want, tc.ok)
		}
	}
}

func TestTail(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", TailBytes) // two bytes each
	got := tail([]byte(long + "\n"))
	if len(got) > TailBytes || !strings.HasSuffix(long, got) {
		t.Errorf("tail of %d bytes = %d bytes", len(long), len(got))
	}
	if got := tail([]byte("  short\n")); got != "short" {
		t.Errorf("tail = %q", got)
	}
}

func FuzzEngineConfig(f *testing.F) {
	for _, s := range []string{
		``, `{}`, `null`, `[]`,
		`{"command": ["claude", "-p", "{model}"], "output": "json", "fields": {"text": "result"}}`,
		`{"command": ["x"], "failures": [{"exit_code": 2, "kind": "rate_limit", "stderr_matches": "a(b", "retry_after_capture": "(\\d+)"}]}`,
		`{"command": ["x", "{prompt_file}"], "prompt_via": "file", "timeout": "1s", "env": ["A"], "secrets_from_env": ["B"]}`,
		`{"command": ["x"], "output": "jsonl", "fields": {"content": "message.content", "type": "t", "result_type": "done"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		c, d := decodeEngineConfig(raw)
		if (c == nil) != diags(d).hasErrors() {
			t.Fatalf("config %v with diagnostics %+v", c != nil, d)
		}
		for _, x := range d {
			if x.Summary == "" {
				t.Errorf("empty diagnostic %+v", x)
			}
		}
		if c == nil {
			return
		}
		// Expanding the template never fails for an accepted config with
		// a model set.
		if _, _, err := c.expand(plugin.RunRequest{Prompt: "p", Target: target}, t.TempDir()); err != nil {
			t.Errorf("expand: %v", err)
		}
		_, _ = decodeNodeConfig(raw)
		_, _, _ = decodeNodeInput(raw)
	})
}

func FuzzParseOutput(f *testing.F) {
	f.Add([]byte(`{"type":"result","result":"x","usage":{"input_tokens":1}}`))
	f.Add([]byte("noise\n{\"type\":\"assistant\",\"message\":{\"content\":[{\"type\":\"text\",\"text\":\"a\"},{\"type\":\"tool_use\",\"input\":{}}]}}\n{\"type\":\"result\""))
	f.Fuzz(func(t *testing.T, out []byte) {
		fields := &Fields{Text: "result", Structured: "s", IsError: "is_error", Model: "model", Content: "message.content",
			UsageInput: "usage.input_tokens", UsageOutput: "usage.output_tokens", Type: "type", ResultType: "result"}
		_, _ = parseJSONOutput(out, fields)
		s := &lineStream{fields: fields, redact: &redactor{}, emit: func(plugin.RunEvent) error { return nil }, stop: func() {}}
		// Feed in two chunks to exercise line reassembly.
		half := len(out) / 2
		s.Write(out[:half])
		s.Write(out[half:])
		a := s.finish()
		for _, p := range a.parts {
			if p.JSON != nil && !json.Valid(p.JSON) {
				t.Errorf("part with invalid JSON %q", p.JSON)
			}
		}
	})
}
