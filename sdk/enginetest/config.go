package enginetest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/obversa/obversa/plugin"
	"github.com/obversa/obversa/sdk/jsonconfig"
)

// Config is the mock engine's configuration: the run file's `config`
// block. Every field is optional; the zero Config answers every prompt with
// a quote of it.
type Config struct {
	// EffectsFile, when set, gets one line per Run call, appended before
	// anything else happens: "<node> <position> <attempt_id> <purpose>\n",
	// with "-" for an empty value. Crash tests count executions with it.
	EffectsFile string `json:"effects_file,omitempty"`
	// CallsLog, when set, gets one line per call: "static" for Admit,
	// "live:ready" or "live:not-ready" for a preflight Run, "ordinary" for
	// any other Run.
	CallsLog string `json:"calls_log,omitempty"`
	// ReadyFile, when set, makes a preflight Run answer only while the file
	// exists and its content, trimmed of white space, is "ready"; otherwise
	// it fails with a transient "not ready" failure.
	ReadyFile string `json:"ready_file,omitempty"`
	// Admit false makes Admit answer unsupported; nil or true answers with
	// the target as the selection.
	Admit *bool `json:"admit,omitempty"`
	// AdmitFailure makes Admit fail with this typed failure; it wins over
	// Admit.
	AdmitFailure *Failure `json:"admit_failure,omitempty"`
	// Default answers a Run no rule applies to; nil means the quoting
	// answer.
	Default *Response `json:"default,omitempty"`
	// Responses are the rules, tried in order (see the package doc for
	// counting).
	Responses []Rule `json:"responses,omitempty"`
}

// Rule selects Run calls and answers them. Empty selectors match every
// call.
type Rule struct {
	// Node matches RunRequest.NodeID exactly.
	Node string `json:"node,omitempty"`
	// PromptContains matches prompts containing this substring.
	PromptContains string `json:"prompt_contains,omitempty"`
	// PositionContains matches positions containing this substring, for
	// example "dag/config/2/" for every member of round 2 of loop config.
	// Unlike calls, it holds across plugin restarts: a position is what
	// the record says.
	PositionContains string `json:"position_contains,omitempty"`
	// Purpose matches "ordinary" or "preflight" calls only.
	Purpose string `json:"purpose,omitempty"`
	// Calls lists the counts (1-based) at which the rule applies; empty
	// means every count.
	Calls []int `json:"calls,omitempty"`
	// AfterCalls makes the rule apply only once its count exceeds it.
	AfterCalls int `json:"after_calls,omitempty"`
	// Response is the answer given when the rule applies.
	Response
}

// Response is one scripted answer. At most one of Text, JSON and Fail may
// be set; with none, the answer quotes the prompt.
type Response struct {
	// Text is the final text part.
	Text *string `json:"text,omitempty"`
	// JSON is the final structured part, any JSON value.
	JSON json.RawMessage `json:"json,omitempty"`
	// Fail makes the call fail with a typed failure.
	Fail *Failure `json:"fail,omitempty"`
	// Delay waits this long (a Go duration, "500ms") before answering;
	// cancelling the call ends the wait at once with an aborted failure.
	Delay string `json:"delay,omitempty"`
	// StreamInterval waits this long (a Go duration) before each streamed
	// text delta after the first, so an answer arrives the way a model's
	// does; the text is streamed one line per delta when it has several
	// lines. Cancelling the call ends the wait with an aborted failure.
	StreamInterval string `json:"stream_interval,omitempty"`
	// Usage is "unknown", or an object {input, output, cache_read,
	// cache_creation} of token counts; absent means counts derived from
	// the prompt and answer lengths (a quarter of their characters,
	// rounded up, at least 1).
	Usage json.RawMessage `json:"usage,omitempty"`
	// Effective overrides parts of the effective identity reported (the
	// requested target otherwise); empty fields keep the target's.
	Effective *Identity `json:"effective,omitempty"`
	// StopReason is reported in the result; default "end_turn".
	StopReason string `json:"stop_reason,omitempty"`
}

// Failure is a scripted typed failure.
type Failure struct {
	// Kind is a protocol failure kind (plugin.FailureKinds); required.
	Kind string `json:"kind"`
	// Message defaults to "mock <kind>".
	Message string `json:"message,omitempty"`
	// RetryAfter is a Go duration ("2s"), the rate-limit back-off hint.
	RetryAfter string `json:"retry_after,omitempty"`
	// Provider and Model name the identity the failure is reported for;
	// empty means the effective identity's.
	Provider string `json:"provider,omitempty"`
	Model    string `json:"model,omitempty"` // see Provider
}

// Identity holds identity overrides; empty fields (nil Tools) are kept
// from the target.
type Identity struct {
	Adapter     string   `json:"adapter,omitempty"`      // adapter name
	Provider    string   `json:"provider,omitempty"`     // model provider
	ModelFamily string   `json:"model_family,omitempty"` // model family
	Model       string   `json:"model,omitempty"`        // model name
	Tools       []string `json:"tools,omitempty"`        // tool names; nil keeps the target's
}

// compiled is a validated Config ready to answer calls.
type compiled struct {
	cfg       Config
	rules     []rule
	def       *answer
	admitFail *plugin.Failure
}

type rule struct {
	node, contains, position string
	purpose                  plugin.Purpose
	calls                    map[int]bool
	afterCalls               int
	answer                   answer
}

// answer is a validated Response.
type answer struct {
	text       *string
	json       json.RawMessage // compact
	fail       *plugin.Failure
	delay      time.Duration
	interval   time.Duration // between streamed deltas
	usage      *plugin.Usage // nil: derived from lengths
	effective  *Identity
	stopReason string
}

// applies reports whether r answers a call that reached it with count n.
func (r *rule) applies(n int) bool {
	return n > r.afterCalls && (len(r.calls) == 0 || r.calls[n])
}

// matches reports whether req satisfies r's selectors.
func (r *rule) matches(req plugin.RunRequest) bool {
	purpose := req.Purpose
	if purpose == "" {
		purpose = plugin.PurposeOrdinary
	}
	return (r.node == "" || r.node == req.NodeID) &&
		(r.contains == "" || strings.Contains(req.Prompt, r.contains)) &&
		(r.position == "" || strings.Contains(req.Position, r.position)) &&
		(r.purpose == "" || r.purpose == purpose)
}

// diags collects diagnostics while compiling.
type diags []plugin.Diagnostic

func (d *diags) errorf(attr, format string, args ...any) {
	*d = append(*d, plugin.Diagnostic{Severity: plugin.SeverityError, Summary: fmt.Sprintf(format, args...), Attribute: attr})
}

func (d diags) hasErrors() bool {
	for _, x := range d {
		if x.Severity == plugin.SeverityError {
			return true
		}
	}
	return false
}

// DecodeConfig decodes and validates raw (the run file's `config` as JSON;
// nil, empty or null means no configuration). It never fails with a Go
// error: every problem is an error diagnostic whose Attribute names the
// field ("responses[2].fail.kind"). The Config is meaningful only when
// there are no error diagnostics.
func DecodeConfig(raw json.RawMessage) (Config, []plugin.Diagnostic) {
	c, d := compile(raw)
	if c == nil {
		return Config{}, d
	}
	return c.cfg, d
}

// compile decodes and validates raw; it returns nil with error diagnostics
// when the configuration is unusable.
func compile(raw json.RawMessage) (*compiled, []plugin.Diagnostic) {
	var d diags
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || string(trimmed) == "null" {
		return &compiled{}, nil
	}
	if trimmed[0] != '{' {
		d.errorf("", "mock engine config must be an object")
		return nil, d
	}
	var cfg Config
	jd, usable := jsonconfig.Decode(trimmed, &cfg, "mock engine config")
	d = append(d, jd...)
	if !usable {
		return nil, d
	}
	c := &compiled{cfg: cfg}
	if cfg.AdmitFailure != nil {
		c.admitFail = compileFailure(&d, "admit_failure", cfg.AdmitFailure)
	}
	if cfg.Default != nil {
		a := compileResponse(&d, "default", cfg.Default)
		c.def = &a
	}
	for i := range cfg.Responses {
		r := &cfg.Responses[i]
		path := fmt.Sprintf("responses[%d]", i)
		cr := rule{node: r.Node, contains: r.PromptContains, position: r.PositionContains, purpose: plugin.Purpose(r.Purpose), afterCalls: r.AfterCalls}
		switch cr.purpose {
		case "", plugin.PurposeOrdinary, plugin.PurposePreflight:
		default:
			d.errorf(path+".purpose", "purpose must be %q or %q, not %q", plugin.PurposeOrdinary, plugin.PurposePreflight, r.Purpose)
		}
		if r.AfterCalls < 0 {
			d.errorf(path+".after_calls", "after_calls must not be negative")
		}
		if len(r.Calls) > 0 {
			cr.calls = map[int]bool{}
			for j, n := range r.Calls {
				if n < 1 {
					d.errorf(fmt.Sprintf("%s.calls[%d]", path, j), "call numbers start at 1, got %d", n)
				}
				cr.calls[n] = true
			}
		}
		cr.answer = compileResponse(&d, path, &r.Response)
		c.rules = append(c.rules, cr)
	}
	if d.hasErrors() {
		return nil, d
	}
	return c, d
}

func compileResponse(d *diags, path string, r *Response) answer {
	a := answer{text: r.Text, effective: r.Effective, stopReason: r.StopReason}
	set := 0
	if r.Text != nil {
		set++
	}
	if len(r.JSON) > 0 && string(r.JSON) != "null" {
		set++
		var buf bytes.Buffer
		if err := json.Compact(&buf, r.JSON); err != nil {
			d.errorf(path+".json", "json is not valid JSON: %v", err)
		}
		a.json = buf.Bytes()
	}
	if r.Fail != nil {
		set++
		a.fail = compileFailure(d, path+".fail", r.Fail)
	}
	if set > 1 {
		d.errorf(path, "set at most one of text, json and fail")
	}
	if r.Delay != "" {
		a.delay = parseDuration(d, path+".delay", r.Delay)
	}
	if r.StreamInterval != "" {
		a.interval = parseDuration(d, path+".stream_interval", r.StreamInterval)
	}
	if len(r.Usage) > 0 && string(r.Usage) != "null" {
		a.usage = compileUsage(d, path+".usage", r.Usage)
	}
	if a.stopReason == "" {
		a.stopReason = "end_turn"
	}
	return a
}

func compileFailure(d *diags, path string, f *Failure) *plugin.Failure {
	kind := plugin.FailureKind(f.Kind)
	if !kind.Valid() {
		d.errorf(path+".kind", "unknown failure kind %q; use one of %s", f.Kind, kindList())
	}
	msg := f.Message
	if msg == "" {
		msg = "mock " + f.Kind
	}
	out := &plugin.Failure{Kind: kind, Message: msg, Provider: f.Provider, Model: f.Model}
	if f.RetryAfter != "" {
		out.RetryAfter = parseDuration(d, path+".retry_after", f.RetryAfter)
	}
	return out
}

func compileUsage(d *diags, path string, raw json.RawMessage) *plugin.Usage {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if s != "unknown" {
			d.errorf(path, `usage must be "unknown" or an object of token counts, not %q`, s)
		}
		return &plugin.Usage{}
	}
	var u struct {
		Input         int64 `json:"input"`
		Output        int64 `json:"output"`
		CacheRead     int64 `json:"cache_read"`
		CacheCreation int64 `json:"cache_creation"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&u); err != nil {
		d.errorf(path, `usage must be "unknown" or {input, output, cache_read, cache_creation} with whole numbers: %v`, err)
		return &plugin.Usage{}
	}
	if u.Input < 0 || u.Output < 0 || u.CacheRead < 0 || u.CacheCreation < 0 {
		d.errorf(path, "token counts must not be negative")
	}
	return &plugin.Usage{Known: true, Input: u.Input, Output: u.Output, CacheRead: u.CacheRead, CacheCreation: u.CacheCreation}
}

func parseDuration(d *diags, path, s string) time.Duration {
	v, err := time.ParseDuration(s)
	if err != nil || v < 0 {
		d.errorf(path, "%q is not a non-negative duration such as \"500ms\" or \"2s\"", s)
		return 0
	}
	return v
}

func kindList() string {
	names := make([]string, len(plugin.FailureKinds))
	for i, k := range plugin.FailureKinds {
		names[i] = string(k)
	}
	return strings.Join(names, ", ")
}
