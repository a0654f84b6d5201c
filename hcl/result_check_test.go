package hcl

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestResultBreaks: the templates that read node w's result and cannot
// render with the given one are named, whatever the other results and
// the loop and each variables are; templates that do not read w, or read
// it where null is a value (a whole input string, try()), are not.
func TestResultBreaks(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		result string // "" for none (null)
		prompt string
		input  string
		want   []string // fields
	}{
		{"prompt interpolates null", "", "Summarise: ${input.results.w}", "", []string{"prompt"}},
		{"prompt is null", "", "${input.results.w}", "", []string{"prompt"}},
		{"prompt attribute of null", "", "${input.results.w.text} and ${input.results.o.x}", "", []string{"prompt"}},
		{"prompt with a value", `{"text": "t"}`, "${input.results.w.text} and ${input.results.o.x}", "", nil},
		{"prompt with the wrong value", `{"other": 1}`, "${input.results.w.text}", "", []string{"prompt"}},
		{"prompt with try", "", `${try(input.results.w.text, "none")}`, "", nil},
		{"prompt of another node", "", "${input.results.o.text} ${loop.round} ${each.key}", "", nil},
		{"prompt with loop variables", "", "${loop.round}: ${input.results.w}", "", []string{"prompt"}},
		{"plain prompt", "", "no templates", "", nil},
		{"input field attribute", "", "", `{"command": ["echo", "${input.results.w.stdout}"]}`, []string{"command[1]"}},
		{"input field is the whole result", "", "", `{"data": "${input.results.w}"}`, nil},
		{"input field length", "", "", `{"n": "${length(input.results.w)}"}`, []string{"n"}},
		{"input and prompt", "", "${input.results.w}", `{"a": "x ${input.results.w}"}`, []string{"prompt", "a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var input json.RawMessage
			if tt.input != "" {
				input = json.RawMessage(tt.input)
			}
			var result json.RawMessage
			if tt.result != "" {
				result = json.RawMessage(tt.result)
			}
			breaks, err := ResultBreaks("w", result, tt.prompt, input)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, b := range breaks {
				got = append(got, b.Field)
				var re *RenderError
				if !errors.As(b.Err, &re) || re.Node != "w" {
					t.Errorf("%s: error %v does not name node w", b.Field, b.Err)
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("fields (-want +got):\n%s", diff)
			}
		})
	}
	if _, err := ResultBreaks("w", json.RawMessage("{"), "${input.results.w}", nil); !errors.Is(err, ErrInvalidResult) {
		t.Errorf("a result that is not JSON: %v, want ErrInvalidResult", err)
	}
}
