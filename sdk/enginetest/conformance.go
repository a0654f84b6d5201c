package enginetest

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"time"

	"github.com/obversa/obversa/plugin"
)

// The mock engine serves the Conformance service (plugin.Conformance):
// the conformance kit arms a scenario for one attempt id and the Run with
// that id produces it instead of a scripted answer. sdk.Serve serves the
// service because Engine implements the interface.

var _ plugin.Conformance = (*Engine)(nil)

// defaultScenarioDelay is how long a delay scenario waits when the kit
// gives no delay.
const defaultScenarioDelay = time.Minute

// conformanceState is the mock engine's scenario control: armed scenarios
// by attempt id and the count of model calls (Runs).
type conformanceState struct {
	mu    sync.Mutex
	armed map[string]plugin.Scenario
	calls atomic.Int64
}

// take counts a model call and returns the scenario armed for id, removing
// it.
func (c *conformanceState) take(id string) (plugin.Scenario, bool) {
	c.calls.Add(1)
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.armed[id]
	if ok {
		delete(c.armed, id)
	}
	return s, ok
}

// Scenarios implements plugin.Conformance: the mock engine produces every
// scenario kind.
func (e *Engine) Scenarios(context.Context) ([]plugin.ScenarioKind, error) {
	return append([]plugin.ScenarioKind(nil), plugin.ScenarioKinds...), nil
}

// Arm implements plugin.Conformance: the next Run whose AttemptID is
// attemptID produces s. Arming the same id again replaces the scenario. An
// invalid scenario gives an invalid_config failure.
func (e *Engine) Arm(_ context.Context, attemptID string, s plugin.Scenario) error {
	if !s.Kind.Valid() || (s.Kind == plugin.ScenarioFailure && !s.Failure.Valid()) {
		return &plugin.Failure{Kind: plugin.FailureInvalidConfig, Message: "mock engine: cannot produce scenario " + s.String()}
	}
	e.conf.mu.Lock()
	defer e.conf.mu.Unlock()
	if e.conf.armed == nil {
		e.conf.armed = map[string]plugin.Scenario{}
	}
	e.conf.armed[attemptID] = s
	return nil
}

// ModelCalls implements plugin.Conformance: every Run is a model call of
// the mock engine (Admit is none).
func (e *Engine) ModelCalls(context.Context) (int64, error) {
	return e.conf.calls.Load(), nil
}

// runScenario answers a Run armed with s:
//
//   - failure: a typed failure of the kind (rate_limit with a 1 s hint);
//   - delay: one text event, then a wait (cancellation ends it with an
//     aborted failure);
//   - unknown_usage: an answer with unknown usage and no usage event;
//   - tool_events: a tool use and its result, streamed and kept as parts
//     before the final text;
//   - late_final: the upstream stream breaks, then its final answer
//     arrives anyway and is kept;
//   - panic: the handler panics.
func runScenario(ctx context.Context, req plugin.RunRequest, emit plugin.Emitter, s plugin.Scenario) (*plugin.RunResult, error) {
	result := func(usage plugin.Usage, parts ...plugin.Part) *plugin.RunResult {
		return &plugin.RunResult{Parts: parts, Usage: usage, Requested: cloneIdentity(req.Target),
			Effective: cloneIdentity(req.Target), StopReason: "end_turn"}
	}
	finalText := func(text string) plugin.Part { return plugin.Part{Kind: plugin.PartText, Text: text, Final: true} }
	withUsage := func(text string, parts ...plugin.Part) (*plugin.RunResult, error) {
		u := derivedUsage(req.Prompt, text)
		if err := send(ctx, emit, plugin.RunEvent{Kind: plugin.EventText, Text: text}); err != nil {
			return nil, err
		}
		if err := send(ctx, emit, plugin.RunEvent{Kind: plugin.EventUsage, Usage: u}); err != nil {
			return nil, err
		}
		return result(u, append(parts, finalText(text))...), nil
	}

	switch s.Kind {
	case plugin.ScenarioFailure:
		f := &plugin.Failure{Kind: s.Failure, Message: "mock scenario " + string(s.Failure),
			Provider: req.Target.Provider, Model: req.Target.Model}
		if s.Failure == plugin.FailureRateLimit {
			f.RetryAfter = time.Second
		}
		return nil, f
	case plugin.ScenarioDelay:
		if err := send(ctx, emit, plugin.RunEvent{Kind: plugin.EventText, Text: "waiting"}); err != nil {
			return nil, err
		}
		d := s.Delay
		if d <= 0 {
			d = defaultScenarioDelay
		}
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return nil, ctxFailure(ctx)
		case <-t.C:
		}
		return withUsage("waited " + d.String())
	case plugin.ScenarioUnknownUsage:
		text := "usage of this answer was not measured"
		if err := send(ctx, emit, plugin.RunEvent{Kind: plugin.EventText, Text: text}); err != nil {
			return nil, err
		}
		return result(plugin.Usage{}, finalText(text)), nil
	case plugin.ScenarioToolEvents:
		use := plugin.RunEvent{Kind: plugin.EventToolUse, ToolID: "toolu_1", ToolName: "read_file", ToolJSON: json.RawMessage(`{"path":"README.md"}`)}
		res := plugin.RunEvent{Kind: plugin.EventToolResult, ToolID: "toolu_1", ToolName: "read_file", ToolJSON: json.RawMessage(`{"content":"# README"}`)}
		for _, ev := range []plugin.RunEvent{use, res} {
			if err := send(ctx, emit, ev); err != nil {
				return nil, err
			}
		}
		return withUsage("README.md starts with a heading",
			plugin.Part{Kind: plugin.PartToolUse, ToolID: use.ToolID, ToolName: use.ToolName, JSON: use.ToolJSON},
			plugin.Part{Kind: plugin.PartToolResult, ToolID: res.ToolID, ToolName: res.ToolName, JSON: res.ToolJSON})
	case plugin.ScenarioLateFinal:
		// The simulated upstream: a delta, a broken connection, then the
		// final answer. An answer that arrived is paid for and kept.
		upstream := []struct {
			delta, final string
			broken       bool
		}{{delta: "partial "}, {broken: true}, {final: "partial answer kept after a transport failure"}}
		var final string
		for _, u := range upstream {
			switch {
			case u.delta != "":
				if err := send(ctx, emit, plugin.RunEvent{Kind: plugin.EventText, Text: u.delta}); err != nil {
					return nil, err
				}
			case u.final != "":
				final = u.final
			}
		}
		u := derivedUsage(req.Prompt, final)
		if err := send(ctx, emit, plugin.RunEvent{Kind: plugin.EventUsage, Usage: u}); err != nil {
			return nil, err
		}
		return result(u, finalText(final)), nil
	case plugin.ScenarioPanic:
		panic("mock engine: scenario panic")
	}
	return nil, &plugin.Failure{Kind: plugin.FailureInvalidConfig, Message: "mock engine: unknown scenario " + s.String()}
}

// structuredWhenAsked honours a request for structured output (an output
// schema) that the configuration answers with text: the answer becomes the
// final structured part {"answer": "<text>"}, so that the engine does what
// its Describe declares. A scripted json answer is kept as it is.
func structuredWhenAsked(req plugin.RunRequest, final plugin.Part, text string) (plugin.Part, string) {
	if len(req.OutputSchema) == 0 || final.Kind != plugin.PartText {
		return final, text
	}
	b, err := json.Marshal(struct {
		Answer string `json:"answer"`
	}{text})
	if err != nil {
		return final, text
	}
	return plugin.Part{Kind: plugin.PartStructured, JSON: b, Final: true}, string(b)
}
