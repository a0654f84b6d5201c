package executor

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/obversa/obversa/hcl"
	"github.com/obversa/obversa/store"
)

// render renders the prompt (engine nodes) or input (binding nodes) of s
// from its dependency results and checks it for the run's known secrets
// (Options.Redactor), once: the policies are asked about exactly what the
// plugin is then given. It returns "" when s is rendered, else the node's
// failure code and message: INPUT_RENDER for a template that does not
// render or a result that cannot be read, KNOWN_SECRET for a rendered text
// that holds a secret (neither a policy nor a plugin sees it).
func (x *Executor) render(ctx context.Context, s *start) (code, msg string) {
	results, err := x.loadResults(ctx, *s)
	if err != nil {
		return CodeInput, err.Error()
	}
	var text []byte
	if s.node.Binding != "" {
		if s.input, err = hcl.RenderInput(s.node.Input, results); err != nil {
			return CodeInput, err.Error()
		}
		if len(s.input) == 0 {
			s.input = json.RawMessage("null")
		}
		text = s.input
	} else {
		if s.prompt, err = hcl.RenderPrompt(s.node.Prompt, results); err != nil {
			return CodeInput, err.Error()
		}
		text = []byte(s.prompt)
	}
	if r := x.o.Redactor; r != nil && !bytes.Equal(r.Redact(text), text) {
		what := "prompt"
		if s.node.Binding != "" {
			what = "input"
		}
		return CodeKnownSecret, fmt.Sprintf("the rendered %s holds a known secret (storage.known_secrets_from_env); it was sent to no policy and no plugin", what)
	}
	s.rendered = true
	return "", ""
}

// loadResults adds the dependency results kept as artifacts.
func (x *Executor) loadResults(ctx context.Context, s start) (map[string]json.RawMessage, error) {
	if len(s.artifacts) == 0 {
		return s.results, nil
	}
	out := make(map[string]json.RawMessage, len(s.results)+len(s.artifacts))
	for id, r := range s.results {
		out[id] = r
	}
	for id, ref := range s.artifacts {
		data, err := x.o.Run.ReadArtifact(ctx, store.ArtifactRef(ref))
		if err != nil {
			return nil, fmt.Errorf("result of %q: %w", id, err)
		}
		out[id] = data
	}
	return out, nil
}
