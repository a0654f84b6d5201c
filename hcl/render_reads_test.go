package hcl

import (
	"encoding/json"
	"testing"
)

// TestReadsResults holds ReadsResults to the renderers: whenever it says
// false, rendering with results and without them gives the same text.
func TestReadsResults(t *testing.T) {
	results := map[string]json.RawMessage{"a": json.RawMessage(`"A"`)}
	tests := []struct {
		prompt string
		input  string
		want   bool
	}{
		{"plain", "", false},
		{"use ${input.results.a}", "", true},
		{"%{ if true }x%{ endif }", "", true},
		{"plain", `{"cmd":["wc"]}`, false},
		{"plain", `{"stdin":"${input.results.a}"}`, true},
		{"plain", `{"stdin":"\u0024{input.results.a}"}`, true},
	}
	for _, tt := range tests {
		got := ReadsResults(tt.prompt, json.RawMessage(tt.input))
		if got != tt.want {
			t.Errorf("ReadsResults(%q, %q) = %v, want %v", tt.prompt, tt.input, got, tt.want)
		}
		if got {
			continue
		}
		p1, err1 := RenderPrompt(tt.prompt, results)
		p2, err2 := RenderPrompt(tt.prompt, nil)
		if p1 != p2 || (err1 == nil) != (err2 == nil) {
			t.Errorf("prompt %q renders differently without results", tt.prompt)
		}
		if tt.input != "" {
			i1, err1 := RenderInput(json.RawMessage(tt.input), results)
			i2, err2 := RenderInput(json.RawMessage(tt.input), nil)
			if string(i1) != string(i2) || (err1 == nil) != (err2 == nil) {
				t.Errorf("input %q renders differently without results", tt.input)
			}
		}
	}
}
