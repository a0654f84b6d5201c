package hcl

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// renderResults are the recorded results the render tests use.
var renderResults = map[string]json.RawMessage{
	"draft": json.RawMessage(`"A haiku."`),
	"count": json.RawMessage(`{"stdout":"9\n","exit_code":0,"lines":["a","b"]}`),
	"n":     json.RawMessage(`3`),
	"bad":   json.RawMessage(`{not json`),
}

func TestRenderPrompt(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		src     string
		want    string
		wantErr error
		wantRef string
		node    string
	}{
		{name: "constant", src: "Write a haiku.", want: "Write a haiku."},
		{name: "escaped sequences render literally", src: "cost: $${price} %%{x}", want: "cost: ${price} %{x}"},
		{name: "results", src: "Summarise: ${input.results.draft} (${chomp(input.results.count.stdout)} bytes)", want: "Summarise: A haiku. (9 bytes)"},
		{name: "index form", src: `${input.results["draft"]}`, want: "A haiku."},
		{name: "number converts", src: "${input.results.n}", want: "3"},
		{name: "directives", src: "%{ for l in input.results.count.lines }[${l}]%{ endfor }%{ if input.results.count.exit_code == 0 } ok%{ endif }", want: "[a][b] ok"},
		{name: "try covers a missing result", src: `${try(input.results.vet.stdout, "no vet")}`, want: "no vet"},
		{name: "jsonencode of an object", src: "${jsonencode(input.results.count)}", want: `{"exit_code":0,"lines":["a","b"],"stdout":"9\n"}`},
		{name: "missing node", src: "x ${input.results.vet.stdout}", wantErr: ErrMissingResult, wantRef: "input.results.vet.stdout", node: "vet"},
		{name: "missing attribute", src: "x ${input.results.count.stderr}", wantErr: ErrMissingAttribute, wantRef: "input.results.count.stderr", node: "count"},
		{name: "index out of range", src: "${input.results.count.lines[5]}", wantErr: ErrMissingAttribute, wantRef: "input.results.count.lines[5]", node: "count"},
		{name: "invalid result JSON", src: "${input.results.bad}", wantErr: ErrInvalidResult, node: "bad"},
		{name: "object is not a string", src: "${input.results.count}", wantErr: ErrTemplate},
		{name: "object inside a template", src: "x ${input.results.count}", wantErr: ErrTemplate},
		{name: "parse error", src: "${", wantErr: ErrTemplate},
		{name: "unknown function", src: "${nope(1)}", wantErr: ErrTemplate},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := RenderPrompt(tc.src, renderResults)
			if tc.wantErr == nil {
				if err != nil {
					t.Fatalf("RenderPrompt: %v", err)
				}
				if got != tc.want {
					t.Errorf("RenderPrompt = %q, want %q", got, tc.want)
				}
				return
			}
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("RenderPrompt error = %v, want %v", err, tc.wantErr)
			}
			var re *RenderError
			if !errors.As(err, &re) {
				t.Fatalf("error %T is not a *RenderError", err)
			}
			if re.Reference != tc.wantRef || re.Node != tc.node {
				t.Errorf("RenderError{Node: %q, Reference: %q}, want {%q, %q}", re.Node, re.Reference, tc.node, tc.wantRef)
			}
			if re.Error() == "" || re.Detail == "" {
				t.Errorf("RenderError lacks a message: %#v", re)
			}
		})
	}
}

func TestRenderInput(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		input     string
		want      string
		wantErr   error
		wantField string
	}{
		{name: "empty", input: ``, want: ``},
		{name: "no templates is returned unchanged", input: `{"command": ["wc", "-c"]}`, want: `{"command": ["wc", "-c"]}`},
		{name: "escaped literal", input: `{"cmd":"echo $${HOME}"}`, want: `{"cmd":"echo ${HOME}"}`},
		{name: "template strings", input: `{"command":["echo","${input.results.draft}"],"n":1}`, want: `{"command":["echo","A haiku."],"n":1}`},
		{name: "single interpolation keeps the value", input: `{"data":"${input.results.count}","lines":"${input.results.count.lines}"}`,
			want: `{"data":{"exit_code":0,"lines":["a","b"],"stdout":"9\n"},"lines":["a","b"]}`},
		{name: "whole input from a result", input: `"${input.results.count}"`, want: `{"exit_code":0,"lines":["a","b"],"stdout":"9\n"}`},
		{name: "keys are not templates", input: `{"${input.results.draft}":1}`, want: `{"${input.results.draft}":1}`},
		{name: "missing result names the field", input: `{"a":[1,{"b c":"${input.results.vet}"}]}`, wantErr: ErrMissingResult, wantField: `a[1]["b c"]`},
		{name: "invalid JSON", input: `{"a":`, wantErr: ErrInvalidInput},
		{name: "invalid JSON with a template", input: `{"a":"${x}"`, wantErr: ErrInvalidInput},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := RenderInput(json.RawMessage(tc.input), renderResults)
			if tc.wantErr == nil {
				if err != nil {
					t.Fatalf("RenderInput: %v", err)
				}
				if diff := cmp.Diff(tc.want, string(got)); diff != "" {
					t.Errorf("RenderInput (-want +got):\n%s", diff)
				}
				return
			}
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("RenderInput error = %v, want %v", err, tc.wantErr)
			}
			var re *RenderError
			if !errors.As(err, &re) || re.Field != tc.wantField {
				t.Errorf("RenderInput error %#v, want Field %q", err, tc.wantField)
			}
		})
	}
}

// TestDecodeThenRender checks the whole path: what Decode stores renders at
// dispatch time to what the run file means.
func TestDecodeThenRender(t *testing.T) {
	t.Parallel()
	src := prelude + `
graph "dag" {
  node "draft" {
    lane   = "writer"
    prompt = "Write about \"logs\": $${not a template}"
  }
  node "count" {
    binding    = "shell"
    depends_on = ["draft"]
    input = {
      command = ["sh", "-c", "printf '%s' \"$1\" | wc -c", "-", "${input.results.draft}"]
      env     = { HOME = "$${HOME}" }
    }
  }
  node "report" {
    kind   = "finalizer"
    lane   = "writer"
    prompt = <<-EOT
      Draft:
        ${input.results.draft}
      Bytes: ${trimspace(input.results.count.stdout)}
      EOT
  }
}`
	rf, diags := Decode([]byte(src), "/proj/run.hcl")
	if diags.HasErrors() {
		t.Fatal(diagsString(t, diags, "/proj/run.hcl", src))
	}
	results := map[string]json.RawMessage{
		"draft": json.RawMessage(`"Logs endure."`),
		"count": json.RawMessage(`{"stdout":" 12\n"}`),
	}
	got := map[string]string{}
	for _, n := range rf.Graph.Nodes {
		if n.Prompt != "" {
			p, err := RenderPrompt(n.Prompt, results)
			if err != nil {
				t.Fatalf("%s: %v", n.ID, err)
			}
			got[n.ID] = p
		}
		if n.Input != nil {
			in, err := RenderInput(n.Input, results)
			if err != nil {
				t.Fatalf("%s: %v", n.ID, err)
			}
			got[n.ID] = string(in)
		}
	}
	want := map[string]string{
		"draft":  `Write about "logs": ${not a template}`,
		"count":  `{"command":["sh","-c","printf '%s' \"$1\" | wc -c","-","Logs endure."],"env":{"HOME":"${HOME}"}}`,
		"report": "Draft:\n  Logs endure.\nBytes: 12\n",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("rendered (-want +got):\n%s", diff)
	}
}

// TestRenderedTextIsBounded: a prompt or input that renders to more than
// MaxRenderedBytes fails with ErrTooLarge naming its size and the bound,
// whether a template made it so or it was that large as written; one of
// exactly MaxRenderedBytes renders.
func TestRenderedTextIsBounded(t *testing.T) {
	big := strings.Repeat("a", MaxRenderedBytes)
	results := map[string]json.RawMessage{"big": json.RawMessage(`{"stdout":"` + big + `"}`)}
	if got, err := RenderPrompt("${input.results.big.stdout}", results); err != nil || len(got) != MaxRenderedBytes {
		t.Fatalf("a prompt of exactly the bound: %d bytes, %v", len(got), err)
	}
	for _, tc := range []struct {
		what   string
		render func() error
		want   string
	}{
		{"templated prompt", func() error { _, err := RenderPrompt("x${input.results.big.stdout}", results); return err },
			"the prompt rendered to 16777217 bytes (16.0 MiB), more than the 16 MiB a rendered prompt may hold"},
		{"literal prompt", func() error { _, err := RenderPrompt(big+"!", nil); return err },
			"the prompt rendered to 16777217 bytes"},
		{"templated input", func() error {
			_, err := RenderInput(json.RawMessage(`{"command":["echo","${input.results.big.stdout}"]}`), results)
			return err
		}, "the input rendered to 16777239 bytes"},
		{"literal input", func() error { _, err := RenderInput(json.RawMessage(`"`+big+`"`), nil); return err },
			"the input rendered to 16777218 bytes"},
	} {
		err := tc.render()
		if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want ErrTooLarge with %q", tc.what, err, tc.want)
		}
	}
}
