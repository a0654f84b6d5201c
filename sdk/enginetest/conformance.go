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
	sc := scenarioRun{ctx: ctx, req: req, emit: emit}
	switch s.Kind {
	case plugin.ScenarioFailure:
		f := &plugin.Failure{Kind: s.Failure, Message: "mock scenario " + string(s.Failure),
			Provider: req.Target.Provider, Model: req.Target.Model}
		if s.Failure == plugin.FailureRateLimit {
			f.RetryAfter = time.Second
		}
		return nil, f
	case plugin.ScenarioDelay:
		return sc.delay(s.Delay)
	case plugin.ScenarioUnknownUsage:
		text := "usage of this answer was not measured"
		if err := send(ctx, emit, plugin.RunEvent{Kind: plugin.EventText, Text: text}); err != nil {
			return nil, err
		}
		return sc.result(plugin.Usage{}, finalText(text)), nil
	case plugin.ScenarioToolEvents:
		return sc.toolEvents()
	case plugin.ScenarioLateFinal:
		return sc.lateFinal()
	case plugin.ScenarioPanic:
		panic("mock engine: scenario panic")
	}
	return nil, &plugin.Failure{Kind: plugin.FailureInvalidConfig, Message: "mock engine: unknown scenario " + s.String()}
}

// scenarioRun is one Run answering an armed scenario.
type scenarioRun struct {
	ctx  context.Context
	req  plugin.RunRequest
	emit plugin.Emitter
}

// result is the scenario's result: parts and usage, the requested target
// as the effective one.
func (sc scenarioRun) result(usage plugin.Usage, parts ...plugin.Part) *plugin.RunResult {
	return &plugin.RunResult{Parts: parts, Usage: usage, Requested: cloneIdentity(sc.req.Target),
		Effective: cloneIdentity(sc.req.Target), StopReason: "end_turn"}
}

// finalText is a final text part.
func finalText(text string) plugin.Part {
	return plugin.Part{Kind: plugin.PartText, Text: text, Final: true}
}

// withUsage streams text and its derived usage, and returns the result of
// parts followed by text as the final part.
func (sc scenarioRun) withUsage(text string, parts ...plugin.Part) (*plugin.RunResult, error) {
	u := derivedUsage(sc.req.Prompt, text)
	if err := send(sc.ctx, sc.emit, plugin.RunEvent{Kind: plugin.EventText, Text: text}); err != nil {
		return nil, err
	}
	if err := send(sc.ctx, sc.emit, plugin.RunEvent{Kind: plugin.EventUsage, Usage: u}); err != nil {
		return nil, err
	}
	return sc.result(u, append(parts, finalText(text))...), nil
}

// delay streams one text event, then waits d (defaultScenarioDelay when
// not positive) unless ctx ends first.
func (sc scenarioRun) delay(d time.Duration) (*plugin.RunResult, error) {
	if err := send(sc.ctx, sc.emit, plugin.RunEvent{Kind: plugin.EventText, Text: "waiting"}); err != nil {
		return nil, err
	}
	if d <= 0 {
		d = defaultScenarioDelay
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-sc.ctx.Done():
		return nil, ctxFailure(sc.ctx)
	case <-t.C:
	}
	return sc.withUsage("waited " + d.String())
}

// toolEvents streams a tool use and its result and keeps both as parts
// before the final text.
func (sc scenarioRun) toolEvents() (*plugin.RunResult, error) {
	use := plugin.RunEvent{Kind: plugin.EventToolUse, ToolID: "toolu_1", ToolName: "read_file", ToolJSON: json.RawMessage(`{"path":"README.md"}`)}
	res := plugin.RunEvent{Kind: plugin.EventToolResult, ToolID: "toolu_1", ToolName: "read_file", ToolJSON: json.RawMessage(`{"content":"# README"}`)}
	for _, ev := range []plugin.RunEvent{use, res} {
		if err := send(sc.ctx, sc.emit, ev); err != nil {
			return nil, err
		}
	}
	return sc.withUsage("README.md starts with a heading",
		plugin.Part{Kind: plugin.PartToolUse, ToolID: use.ToolID, ToolName: use.ToolName, JSON: use.ToolJSON},
		plugin.Part{Kind: plugin.PartToolResult, ToolID: res.ToolID, ToolName: res.ToolName, JSON: res.ToolJSON})
}

// lateFinal plays a simulated upstream: a delta, a broken connection, then
// the final answer. An answer that arrived is paid for and kept.
func (sc scenarioRun) lateFinal() (*plugin.RunResult, error) {
	upstream := []struct {
		delta, final string
		broken       bool
	}{{delta: "partial "}, {broken: true}, {final: "partial answer kept after a transport failure"}}
	var final string
	for _, u := range upstream {
		switch {
		case u.delta != "":
			if err := send(sc.ctx, sc.emit, plugin.RunEvent{Kind: plugin.EventText, Text: u.delta}); err != nil {
				return nil, err
			}
		case u.final != "":
			final = u.final
		}
	}
	u := derivedUsage(sc.req.Prompt, final)
	if err := send(sc.ctx, sc.emit, plugin.RunEvent{Kind: plugin.EventUsage, Usage: u}); err != nil {
		return nil, err
	}
	return sc.result(u, finalText(final)), nil
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
