package plugin

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestRunResultValidate(t *testing.T) {
	t.Parallel()
	text := func(s string, final bool) Part { return Part{Kind: PartText, Text: s, Final: final} }
	tests := []struct {
		name    string
		result  RunResult
		wantErr string // "" = valid
	}{
		{"one final text", RunResult{Parts: []Part{{Kind: PartThinking, Text: "t"}, text("a", true)}}, ""},
		{"one final structured", RunResult{Parts: []Part{{Kind: PartStructured, JSON: json.RawMessage(`{"a":1}`), Final: true}}}, ""},
		{"reported usage", RunResult{Parts: []Part{text("a", true)}, Usage: Usage{Known: true, Input: 1}}, ""},
		{"no parts", RunResult{}, "0 final parts"},
		{"no final", RunResult{Parts: []Part{text("a", false)}}, "0 final parts"},
		{"two finals", RunResult{Parts: []Part{text("a", true), text("b", true)}}, "2 final parts"},
		{"final thinking", RunResult{Parts: []Part{{Kind: PartThinking, Final: true}}}, "final part is thinking"},
		{"final tool use", RunResult{Parts: []Part{{Kind: PartToolUse, Final: true}}}, "final part is tool_use"},
		{"unknown kind", RunResult{Parts: []Part{{Kind: "image"}, text("a", true)}}, `unknown kind "image"`},
		{"bad JSON", RunResult{Parts: []Part{{Kind: PartToolUse, JSON: json.RawMessage(`{`)}, text("a", true)}}, "JSON is not valid"},
		{"structured without JSON", RunResult{Parts: []Part{{Kind: PartStructured, Final: true}}}, "structured part has no JSON"},
		{"negative usage", RunResult{Parts: []Part{text("a", true)}, Usage: Usage{Known: true, Output: -1}}, "negative"},
		{"largest usage the record holds", RunResult{Parts: []Part{text("a", true)}, Usage: Usage{Known: true, Output: MaxUsageCount}}, ""},
		{"usage the record cannot hold exactly", RunResult{Parts: []Part{text("a", true)}, Usage: Usage{Known: true, CacheCreation: MaxUsageCount + 1}}, "above 2^53 − 1"},
		{"unknown usage with counts", RunResult{Parts: []Part{text("a", true)}, Usage: Usage{Input: 3}}, "unknown usage carries token counts"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tt.result.Validate()
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("Validate() = %v, want nil", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("Validate() = %v, want error containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestRunEventValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		event RunEvent
		valid bool
	}{
		{"text", RunEvent{Kind: EventText, Text: "x"}, true},
		{"tool use", RunEvent{Kind: EventToolUse, ToolJSON: json.RawMessage(`{"a":1}`)}, true},
		{"usage", RunEvent{Kind: EventUsage, Usage: Usage{Known: true, Input: 2}}, true},
		{"unknown kind", RunEvent{Kind: "image"}, false},
		{"bad tool JSON", RunEvent{Kind: EventToolResult, ToolJSON: json.RawMessage(`nope`)}, false},
		{"bad usage", RunEvent{Kind: EventUsage, Usage: Usage{Known: true, Input: -2}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if err := tt.event.Validate(); (err == nil) != tt.valid {
				t.Errorf("Validate() = %v, want valid=%v", err, tt.valid)
			}
		})
	}
}

func TestFailureError(t *testing.T) {
	t.Parallel()
	tests := []struct {
		f    Failure
		want string
	}{
		{Failure{Kind: FailureAuth, Message: "bad key"}, "auth: bad key"},
		{Failure{Message: "boom"}, "unknown: boom"},
		{Failure{Kind: FailureQuota}, "quota"},
	}
	for _, tt := range tests {
		if got := tt.f.Error(); got != tt.want {
			t.Errorf("%+v.Error() = %q, want %q", tt.f, got, tt.want)
		}
	}
}

func TestIdentityOr(t *testing.T) {
	t.Parallel()
	d := Identity{Adapter: "a", Provider: "p", ModelFamily: "f", Model: "m", Tools: []string{"x"}}
	tests := []struct {
		name string
		id   Identity
		want Identity
	}{
		{"empty takes all", Identity{}, d},
		{"set fields stay", Identity{Provider: "q", Model: "n"}, Identity{Adapter: "a", Provider: "q", ModelFamily: "f", Model: "n", Tools: []string{"x"}}},
		{"empty tools stay empty", Identity{Tools: []string{}}, Identity{Adapter: "a", Provider: "p", ModelFamily: "f", Model: "m", Tools: []string{}}},
	}
	for _, tt := range tests {
		got := tt.id.Or(d)
		if got.Adapter != tt.want.Adapter || got.Provider != tt.want.Provider || got.ModelFamily != tt.want.ModelFamily ||
			got.Model != tt.want.Model || strings.Join(got.Tools, ",") != strings.Join(tt.want.Tools, ",") || (got.Tools == nil) != (tt.want.Tools == nil) {
			t.Errorf("%s: %+v.Or = %+v, want %+v", tt.name, tt.id, got, tt.want)
		}
	}
}
