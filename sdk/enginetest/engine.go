package enginetest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/obversa/obversa/plugin"
)

// Name is the adapter name the mock engine describes itself with.
const Name = "mock"

// Version is the mock engine's version.
const Version = "0.1.0"

// Engine is the mock engine. The zero value is not usable; call New. All
// methods are safe for concurrent use.
type Engine struct {
	mu     sync.Mutex
	cfg    *compiled
	counts []int // per rule of cfg
	files  sync.Mutex
	conf   conformanceState // scenario control, conformance.go
}

var _ plugin.Engine = (*Engine)(nil)

// New returns an unconfigured mock engine: it admits every target and
// answers every prompt with a quote of it.
func New() *Engine {
	return &Engine{cfg: &compiled{}}
}

// Configured returns a mock engine configured with cfg. It returns an
// error listing the error diagnostics when cfg is invalid.
func Configured(cfg Config) (*Engine, error) {
	raw, err := json.Marshal(cfg)
	if err != nil {
		return nil, fmt.Errorf("enginetest: encode config: %w", err)
	}
	e := New()
	d, _ := e.Configure(context.Background(), raw)
	var msgs []string
	for _, x := range d {
		if x.Severity == plugin.SeverityError {
			msgs = append(msgs, x.Attribute+": "+x.Summary)
		}
	}
	if len(msgs) > 0 {
		return nil, fmt.Errorf("enginetest: invalid config: %s", strings.Join(msgs, "; "))
	}
	return e, nil
}

// Describe reports name "mock", Version, admit and structured output, no
// tools, unlimited concurrency and every failure kind.
func (e *Engine) Describe(context.Context) (*plugin.Description, error) {
	return &plugin.Description{
		Name:    Name,
		Version: Version,
		Types:   []plugin.Type{plugin.TypeEngine},
		Capabilities: plugin.Capabilities{
			Admit:            true,
			StructuredOutput: true,
		},
		FailureKinds: append([]plugin.FailureKind(nil), plugin.FailureKinds...),
	}, nil
}

// Configure decodes config (see Config and DecodeConfig). With error
// diagnostics the previous configuration stays in force; otherwise the new
// one replaces it and every rule count restarts at zero. The Go error is
// always nil.
func (e *Engine) Configure(_ context.Context, config json.RawMessage) ([]plugin.Diagnostic, error) {
	c, d := compile(config)
	if c == nil {
		return d, nil
	}
	e.mu.Lock()
	e.cfg, e.counts = c, make([]int, len(c.rules))
	e.mu.Unlock()
	return d, nil
}

// Admit logs "static" to calls_log, then fails with admit_failure when
// configured, answers unsupported when admit is false, and otherwise
// selects the target as it is. It never calls a model.
func (e *Engine) Admit(ctx context.Context, req plugin.AdmitRequest) (*plugin.AdmitResponse, error) {
	if err := ctxFailure(ctx); err != nil {
		return nil, err
	}
	c := e.config()
	if err := e.appendLine(c.cfg.CallsLog, "static"); err != nil {
		return nil, err
	}
	if c.admitFail != nil {
		f := *c.admitFail
		if f.Provider == "" && f.Model == "" {
			f.Provider, f.Model = req.Target.Provider, req.Target.Model
		}
		return nil, &f
	}
	if c.cfg.Admit != nil && !*c.cfg.Admit {
		return &plugin.AdmitResponse{Supported: false}, nil
	}
	return &plugin.AdmitResponse{Supported: true, Selection: cloneIdentity(req.Target)}, nil
}

// Run answers one call. It appends to effects_file first, then logs to
// calls_log, checks ready_file for a preflight call, picks the first rule
// that applies (or the default), waits its delay, and either fails with its
// typed failure or streams up to three text deltas (one per line, each
// after stream_interval, when the rule sets one) and a usage event (when
// usage is known, equal to the result's) and returns the result.
//
// A cancelled ctx ends the call with an aborted failure, an expired
// deadline with a timeout failure; an error from emit ends it with an
// aborted failure. Failures to write the log files are unknown failures.
// A Run whose attempt id the conformance kit armed produces the armed
// scenario instead, and a request with an output schema that the
// configuration answers with text gets the final structured part
// {"answer": "<text>"} (conformance.go).
func (e *Engine) Run(ctx context.Context, req plugin.RunRequest, emit plugin.Emitter) (*plugin.RunResult, error) {
	if s, ok := e.conf.take(req.AttemptID); ok {
		return runScenario(ctx, req, emit, s)
	}
	c := e.config()
	ready, err := e.logCall(c, req)
	if err != nil {
		return nil, err
	}
	if err := ctxFailure(ctx); err != nil {
		return nil, err
	}
	if !ready {
		return nil, &plugin.Failure{Kind: plugin.FailureTransient, Message: "not ready", Provider: req.Target.Provider, Model: req.Target.Model}
	}

	a := e.choose(c, req)
	effective := cloneIdentity(req.Target)
	if o := a.effective; o != nil {
		overrideIdentity(&effective, o)
	}
	if err := wait(ctx, a.delay); err != nil {
		return nil, err
	}
	if a.fail != nil {
		f := *a.fail
		if f.Provider == "" && f.Model == "" {
			f.Provider, f.Model = effective.Provider, effective.Model
		}
		return nil, &f
	}

	final, outText := answerPart(a, req.Prompt)
	final, outText = structuredWhenAsked(req, final, outText)
	usage := derivedUsage(req.Prompt, outText)
	if a.usage != nil {
		usage = *a.usage
	}
	if err := streamAnswer(ctx, emit, a, final, outText, usage); err != nil {
		return nil, err
	}
	return &plugin.RunResult{
		Parts:      []plugin.Part{final},
		Usage:      usage,
		Requested:  cloneIdentity(req.Target),
		Effective:  effective,
		StopReason: a.stopReason,
	}, nil
}

// config returns the configuration in force.
func (e *Engine) config() *compiled {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.cfg
}

// choose returns the answer of the first rule that applies to req,
// counting every rule reached whose selectors match, or the default.
func (e *Engine) choose(c *compiled, req plugin.RunRequest) answer {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.cfg == c { // counts belong to the configuration in force
		for i := range c.rules {
			r := &c.rules[i]
			if !r.matches(req) {
				continue
			}
			e.counts[i]++
			if r.applies(e.counts[i]) {
				return r.answer
			}
		}
	}
	if c.def != nil {
		return *c.def
	}
	return answer{stopReason: "end_turn"}
}

func overrideIdentity(id *plugin.Identity, o *Identity) {
	if o.Adapter != "" {
		id.Adapter = o.Adapter
	}
	if o.Provider != "" {
		id.Provider = o.Provider
	}
	if o.ModelFamily != "" {
		id.ModelFamily = o.ModelFamily
	}
	if o.Model != "" {
		id.Model = o.Model
	}
	if o.Tools != nil {
		id.Tools = append([]string(nil), o.Tools...)
	}
}

func cloneIdentity(id plugin.Identity) plugin.Identity {
	if id.Tools != nil {
		id.Tools = append([]string{}, id.Tools...)
	}
	return id
}
