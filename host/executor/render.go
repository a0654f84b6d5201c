package executor

import (
	"context"
	"encoding/json"
	"fmt"
)

// render renders the prompt (engine nodes) or input (binding nodes) of s
// from what its templates may read (its scope: dependency results, loop
// and for_each variables) and checks it for the run's known secrets
// (Options.Redactor), once: the policies are asked about exactly what the
// plugin is then given. It returns "" when s is rendered, else the node's
// failure code and message: INPUT_RENDER for a template that does not
// render or a result that cannot be read, codeFault (with s.fault) when
// the record cannot give back a result (fault.go), KNOWN_SECRET for a
// rendered text that holds a secret (neither a policy nor a plugin sees
// it). It reads only s and the record, so several run at once.
func (x *Executor) render(ctx context.Context, s *start) (code, msg string) {
	sc, err := x.resolve(ctx, s.scope)
	if s.err != nil {
		err = s.err
	}
	if err != nil {
		if isFault(err) {
			// The record, not the node, is at fault: the run stops and
			// pauses (fault.go).
			s.fault = err
			return codeFault, err.Error()
		}
		return CodeInput, err.Error()
	}
	var text []byte
	if s.node.Binding != "" {
		if s.input, err = sc.Input(s.node.Input); err != nil {
			return CodeInput, err.Error()
		}
		if len(s.input) == 0 {
			s.input = json.RawMessage("null")
		}
		text = s.input
	} else {
		if s.prompt, err = sc.Prompt(s.node.Prompt); err != nil {
			return CodeInput, err.Error()
		}
		text = []byte(s.prompt)
	}
	if name, found := x.o.Redactor.Find(text); found {
		what := "prompt"
		if s.node.Binding != "" {
			what = "input"
		}
		return CodeKnownSecret, fmt.Sprintf("the rendered %s holds %s (storage.known_secrets_from_env; value withheld); it was sent to no policy and no plugin", what, name)
	}
	s.rendered = true
	return "", ""
}
