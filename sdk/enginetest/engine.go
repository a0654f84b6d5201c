package enginetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

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

// logCall appends the call to effects_file, then to calls_log, and says
// whether the engine is ready: always, except for a preflight call while
// ready_file does not say so.
func (e *Engine) logCall(c *compiled, req plugin.RunRequest) (ready bool, err error) {
	purpose := req.Purpose
	if purpose == "" {
		purpose = plugin.PurposeOrdinary
	}
	if err := e.appendLine(c.cfg.EffectsFile, strings.Join([]string{
		dash(req.NodeID), dash(req.Position), dash(req.AttemptID), string(purpose),
	}, " ")); err != nil {
		return false, err
	}
	call := "ordinary"
	ready = true
	if purpose == plugin.PurposePreflight {
		ready = c.cfg.ReadyFile == "" || fileSaysReady(c.cfg.ReadyFile)
		call = "live:ready"
		if !ready {
			call = "live:not-ready"
		}
	}
	if err := e.appendLine(c.cfg.CallsLog, call); err != nil {
		return false, err
	}
	return ready, nil
}

// answerPart is a's final part and its text: a's JSON as a structured
// part, else a's text or "mock answer to: <prompt>" as a text part.
func answerPart(a answer, prompt string) (plugin.Part, string) {
	if a.json != nil {
		return plugin.Part{Kind: plugin.PartStructured, JSON: append(json.RawMessage(nil), a.json...), Final: true}, string(a.json)
	}
	outText := fmt.Sprintf("mock answer to: %q", prompt)
	if a.text != nil {
		outText = *a.text
	}
	return plugin.Part{Kind: plugin.PartText, Text: outText, Final: true}, outText
}

// streamAnswer emits a text final's deltas (up to three, or one per line when
// a sets a stream interval, waiting it between them) and then, when usage
// is known, a usage event.
func streamAnswer(ctx context.Context, emit plugin.Emitter, a answer, final plugin.Part, outText string, usage plugin.Usage) error {
	if final.Kind == plugin.PartText {
		deltas := splitText(outText, 3)
		if a.interval > 0 && strings.Contains(strings.TrimSuffix(outText, "\n"), "\n") {
			deltas = strings.SplitAfter(outText, "\n")
		}
		for i, delta := range deltas {
			if i > 0 && a.interval > 0 {
				if err := wait(ctx, a.interval); err != nil {
					return err
				}
			}
			if err := send(ctx, emit, plugin.RunEvent{Kind: plugin.EventText, Text: delta}); err != nil {
				return err
			}
		}
	}
	if usage.Known {
		if err := send(ctx, emit, plugin.RunEvent{Kind: plugin.EventUsage, Usage: usage}); err != nil {
			return err
		}
	}
	return nil
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

// appendLine appends line and a newline to path, if path is set.
func (e *Engine) appendLine(path, line string) error {
	if path == "" {
		return nil
	}
	e.files.Lock()
	defer e.files.Unlock()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err == nil {
		_, err = f.WriteString(line + "\n")
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return &plugin.Failure{Kind: plugin.FailureUnknown, Message: "mock engine log: " + err.Error()}
	}
	return nil
}

// send emits ev unless ctx is over; an emitter error ends the call.
func send(ctx context.Context, emit plugin.Emitter, ev plugin.RunEvent) error {
	if err := ctxFailure(ctx); err != nil {
		return err
	}
	if emit == nil {
		return nil
	}
	if err := emit(ev); err != nil {
		return &plugin.Failure{Kind: plugin.FailureAborted, Message: "event stream closed: " + err.Error()}
	}
	return nil
}

// ctxFailure maps an ended context to its typed failure: timeout for an
// expired deadline, aborted for a cancellation; nil while ctx is live.
func ctxFailure(ctx context.Context) error {
	switch err := ctx.Err(); {
	case err == nil:
		return nil
	case errors.Is(err, context.DeadlineExceeded):
		return &plugin.Failure{Kind: plugin.FailureTimeout, Message: "mock engine: deadline exceeded"}
	default:
		return &plugin.Failure{Kind: plugin.FailureAborted, Message: "mock engine: call cancelled"}
	}
}

// fileSaysReady reports whether path holds "ready".
func fileSaysReady(path string) bool {
	b, err := os.ReadFile(path)
	return err == nil && strings.TrimSpace(string(b)) == "ready"
}

// derivedUsage counts a quarter of the characters of prompt and answer,
// rounded up, at least 1 each.
func derivedUsage(prompt, answer string) plugin.Usage {
	tokens := func(s string) int64 { return max(1, int64(utf8.RuneCountInString(s)+3)/4) }
	return plugin.Usage{Known: true, Input: tokens(prompt), Output: tokens(answer)}
}

// wait waits d, or fails as ctx ends (ctxFailure).
func wait(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctxFailure(ctx)
	case <-t.C:
		return nil
	}
}

// splitText cuts s into at most n non-empty pieces on rune boundaries whose
// concatenation is s.
func splitText(s string, n int) []string {
	if s == "" {
		return nil
	}
	var out []string
	size := max(1, (len(s)+n-1)/n)
	for len(s) > 0 {
		cut := min(size, len(s))
		for cut < len(s) && !utf8.RuneStart(s[cut]) {
			cut++
		}
		out = append(out, s[:cut])
		s = s[cut:]
	}
	return out
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

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
