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
		{"prompt that fails whatever the result", "", "${input.results.w} ${[1]}", "", nil},
		{"input field that fails whatever the result, then one null breaks", "", "", `{"a": "${[1]} ${input.results.w}", "b": "${input.results.w.x}"}`, []string{"b"}},
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
			wantBreaks(t, ResultRead{Node: "w", Vertex: "w"}, result, Templates{Prompt: tt.prompt, Input: input}, tt.want)
		})
	}
	if _, err := ResultBreaks(ResultRead{Node: "w", Vertex: "w"}, json.RawMessage("{"), Templates{Prompt: "${input.results.w}"}); !errors.Is(err, ErrInvalidResult) {
		t.Errorf("a result that is not JSON: %v, want ErrInvalidResult", err)
	}
}

// TestResultBreaksWhereRead: the result is found where ResultRead says —
// a for_each instance's or a loop member's field of its vertex's object,
// or loop.previous in the loop's next round — and for_each sources and
// until conditions are checked beside prompts and inputs; a template that
// cannot render whatever the result is does not count.
func TestResultBreaksWhereRead(t *testing.T) {
	t.Parallel()
	instance := ResultRead{Node: "lint", Vertex: "lint", Key: "b", Keys: []string{"a", "b", "c"}}
	member := ResultRead{Node: "author", Vertex: "config", Key: "author", Keys: []string{"author", "check"}}
	previous := ResultRead{Node: "author", Key: "author", Keys: []string{"author", "check"}, PreviousRound: 2}
	plain := ResultRead{Node: "w", Vertex: "w"}
	tests := []struct {
		name string
		read ResultRead
		t    Templates
		want []string
	}{
		{"instance attribute", instance, Templates{Prompt: `${input.results.lint.b.text}`}, []string{"prompt"}},
		{"instance by index", instance, Templates{Prompt: `${input.results.lint["b"].text}`}, []string{"prompt"}},
		{"another instance", instance, Templates{Prompt: `${input.results.lint.a.text}`}, nil},
		{"every instance", instance, Templates{Input: json.RawMessage(`{"all": "${join(\",\", [for k, r in input.results.lint : r.text])}"}`)}, []string{"all"}},
		{"instances counted", instance, Templates{Prompt: `${length(input.results.lint)} lints`}, nil},
		{"the whole object", instance, Templates{Input: json.RawMessage(`{"data": "${input.results.lint}"}`)}, nil},
		{"member from outside", member, Templates{Input: json.RawMessage(`{"stdin": "${input.results.config.author.text}"}`)}, []string{"stdin"}},
		{"another member from outside", member, Templates{Prompt: `${input.results.config.check.text}`}, nil},
		{"member in the next round", previous, Templates{Prompt: `Revise: ${loop.previous.author.text}`}, []string{"prompt"}},
		{"member in the next round, guarded", previous, Templates{Prompt: `${loop.round > 1 ? loop.previous.author.text : ""}`}, []string{"prompt"}},
		{"member in the next round with try", previous, Templates{Prompt: `${try(loop.previous.author.text, "")}`}, nil},
		{"another member in the next round", previous, Templates{Prompt: `${loop.previous.check.text} ${loop.findings}`}, nil},
		{"loop.previous whole", previous, Templates{Input: json.RawMessage(`{"a": "${loop.previous.author}", "b": "${loop.previous}"}`)}, nil},
		{"for_each source attribute", plain, Templates{ForEach: `${input.results.w.files}`}, []string{"for_each"}},
		{"for_each source null", plain, Templates{ForEach: `${input.results.w}`}, []string{"for_each"}},
		{"for_each source of another node", plain, Templates{ForEach: `${input.results.o.files}`}, nil},
		{"for_each source with a fallback", plain, Templates{ForEach: `${try(input.results.w.files, [])}`}, nil},
		{"until length", plain, Templates{Until: `${length(input.results.w) > 0}`}, []string{"until"}},
		{"until null", plain, Templates{Until: `${input.results.w}`}, []string{"until"}},
		{"until compares with null", plain, Templates{Until: `${input.results.w != null}`}, nil},
		{"until of a member in the next round", previous, Templates{Until: `${loop.previous.author.done}`}, []string{"until"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantBreaks(t, tt.read, nil, tt.t, tt.want)
		})
	}
}

// wantBreaks checks that ResultBreaks names the fields want, each with an
// error naming read's node and, for a failed render, the reference.
func wantBreaks(t *testing.T, read ResultRead, result json.RawMessage, tmpl Templates, want []string) {
	t.Helper()
	breaks, err := ResultBreaks(read, result, tmpl)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, b := range breaks {
		got = append(got, b.Field)
		var re *RenderError
		if !errors.As(b.Err, &re) || re.Node != read.Node || re.Reference == "" {
			t.Errorf("%s: error %v does not name node %s and the reference", b.Field, b.Err, read.Node)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("fields (-want +got):\n%s", diff)
	}
}
