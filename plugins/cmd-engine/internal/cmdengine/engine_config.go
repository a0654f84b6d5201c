package cmdengine

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/obversa/obversa/plugin"
)

// Defaults of the engine configuration.
const (
	// DefaultEngineTimeout bounds one engine call when `timeout` is unset.
	DefaultEngineTimeout = 10 * time.Minute
	// DefaultEngineMaxOutputBytes caps stdout and stderr each, per call.
	DefaultEngineMaxOutputBytes = 10 << 20
)

// BaseEnv lists the variables every command inherits from the plugin's own
// (already minimal) environment; `env` adds names to it.
var BaseEnv = []string{
	"PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR",
	"XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_RUNTIME_DIR",
}

// Ways to pass the prompt (`prompt_via`).
const (
	PromptViaStdin = "stdin"
	PromptViaFile  = "file"
	PromptViaArg   = "arg"
)

// Output formats (`output`).
const (
	OutputText  = "text"
	OutputJSON  = "json"
	OutputJSONL = "jsonl"
)

// Placeholders expanded in `command` elements.
const (
	PlaceholderPrompt      = "{prompt}"
	PlaceholderPromptFile  = "{prompt_file}"
	PlaceholderModel       = "{model}"
	PlaceholderProvider    = "{provider}"
	PlaceholderModelFamily = "{model_family}"
	PlaceholderWorkspace   = "{workspace}"
	PlaceholderSchema      = "{schema}"
	PlaceholderSchemaFile  = "{schema_file}"
)

// EngineConfig is the engine's `config` block.
type EngineConfig struct {
	// Command is the argv template; required. Its first element is the
	// executable and may not contain placeholders.
	Command []string `json:"command"`
	// PromptVia is "stdin" (default), "file" (the command must contain
	// {prompt_file}) or "arg" ({prompt} is replaced, or the prompt is
	// appended as the last argument).
	PromptVia string `json:"prompt_via,omitempty"`
	// Output is "text" (default), "json" or "jsonl".
	Output string `json:"output,omitempty"`
	// Fields locate values in JSON output.
	Fields Fields `json:"fields,omitzero"`
	// Failures classify failed calls, first match wins.
	Failures []FailureRule `json:"failures,omitempty"`
	// Timeout bounds one call (Go duration, default "10m"); the attempt's
	// own deadline applies when shorter.
	Timeout string `json:"timeout,omitempty"`
	// TeardownGrace is the wait between SIGTERM and SIGKILL when a call
	// is stopped (default 2s).
	TeardownGrace string `json:"teardown_grace,omitempty"`
	// MaxOutputBytes caps stdout and stderr each (default 10 MiB).
	MaxOutputBytes int64 `json:"max_output_bytes,omitempty"`
	// MaxMemoryBytes caps the command tree's resident memory; 0: no cap.
	MaxMemoryBytes int64 `json:"max_memory_bytes,omitempty"`
	// SecretsFromEnv names variables whose values are redacted from
	// everything returned.
	SecretsFromEnv []string `json:"secrets_from_env,omitempty"`
	// Env names variables the command inherits, besides BaseEnv.
	Env []string `json:"env,omitempty"`
}

// Fields are dot-separated paths ("usage.input_tokens", "content.0.text")
// into the JSON object (output "json") or the result line (output "jsonl").
// An empty path means the value is not read.
type Fields struct {
	Text               string `json:"text,omitempty"`                 // the final text
	Structured         string `json:"structured,omitempty"`           // a JSON value for the final structured part
	IsError            string `json:"is_error,omitempty"`             // true makes the call fail
	ErrorMessage       string `json:"error_message,omitempty"`        // quoted in failure messages
	Model              string `json:"model,omitempty"`                // the model the CLI reports
	StopReason         string `json:"stop_reason,omitempty"`          // the stop reason
	UsageInput         string `json:"usage_input,omitempty"`          // input tokens
	UsageOutput        string `json:"usage_output,omitempty"`         // output tokens
	UsageCacheRead     string `json:"usage_cache_read,omitempty"`     // cache-read tokens
	UsageCacheCreation string `json:"usage_cache_creation,omitempty"` // cache-creation tokens
	// Type is the path of each JSON line's type (jsonl; default "type").
	Type string `json:"type,omitempty"`
	// ResultType is the type value of the final result line (jsonl;
	// default "result").
	ResultType string `json:"result_type,omitempty"`
	// Content is the path of an array of content blocks on other lines
	// (jsonl; e.g. "message.content"), streamed as events.
	Content string `json:"content,omitempty"`
	// TextDelta is the path of a text fragment on other lines (jsonl;
	// e.g. "event.delta.text" for partial messages), streamed as a text
	// event. When set, text blocks become parts without being streamed
	// again.
	TextDelta string `json:"text_delta,omitempty"`
}

// FailureRule classifies a failed call: a non-zero exit, or an is_error
// answer in JSON output. Every condition set must hold.
type FailureRule struct {
	// ExitCode must equal the exit code, when set.
	ExitCode *int `json:"exit_code,omitempty"`
	// StderrMatches and StdoutMatches are Go regular expressions
	// (RE2 syntax) that must match the stream, when set.
	StderrMatches string `json:"stderr_matches,omitempty"`
	StdoutMatches string `json:"stdout_matches,omitempty"` // see StderrMatches
	// Kind is the protocol failure kind; required.
	Kind string `json:"kind"`
	// Message replaces the default message.
	Message string `json:"message,omitempty"`
	// RetryAfterCapture is a regular expression searched in stderr, then
	// stdout; its first group (or whole match) is a Go duration ("2s") or
	// a number of seconds, reported as the retry-after hint.
	RetryAfterCapture string `json:"retry_after_capture,omitempty"`
}

// engineConfig is a validated EngineConfig.
type engineConfig struct {
	raw            EngineConfig
	timeout, grace time.Duration
	maxOutput      int64
	rules          []failureRule
	inherit        []string
	redact         *redactor
	usesPromptFile bool
	usesModel      bool
}

type failureRule struct {
	exitCode       *int
	stderr, stdout *regexp.Regexp
	kind           plugin.FailureKind
	message        string
	retryAfter     *regexp.Regexp
}

// decodeEngineConfig validates raw. It returns nil with error diagnostics
// when the configuration is unusable.
func decodeEngineConfig(raw json.RawMessage) (*engineConfig, []plugin.Diagnostic) {
	var d diags
	var cfg EngineConfig
	if !decodeStrict(&d, raw, &cfg, "cmd engine config") {
		return nil, d
	}
	c := &engineConfig{raw: cfg, timeout: DefaultEngineTimeout, maxOutput: DefaultEngineMaxOutputBytes}
	if len(cfg.Command) == 0 || cfg.Command[0] == "" {
		d.errorf("command", "command is required: the CLI and its arguments, e.g. [\"claude\", \"-p\"]")
	} else if containsPlaceholder(cfg.Command[0]) {
		d.errorf("command[0]", "the executable may not contain placeholders")
	}
	for i, a := range cfg.Command {
		if strings.ContainsRune(a, 0) {
			d.errorf(fmt.Sprintf("command[%d]", i), "arguments may not contain NUL bytes")
		}
		c.usesPromptFile = c.usesPromptFile || strings.Contains(a, PlaceholderPromptFile)
		c.usesModel = c.usesModel || strings.Contains(a, PlaceholderModel)
	}
	switch cfg.PromptVia {
	case "", PromptViaStdin, PromptViaArg:
	case PromptViaFile:
		if !c.usesPromptFile && len(cfg.Command) > 0 {
			d.errorf("prompt_via", `prompt_via = "file" needs %s in command`, PlaceholderPromptFile)
		}
	default:
		d.errorf("prompt_via", "prompt_via must be %q, %q or %q, not %q", PromptViaStdin, PromptViaFile, PromptViaArg, cfg.PromptVia)
	}
	switch cfg.Output {
	case "", OutputText:
	case OutputJSON:
		if cfg.Fields.Text == "" && cfg.Fields.Structured == "" {
			d.errorf("fields", `output = "json" needs fields.text or fields.structured`)
		}
	case OutputJSONL:
		if cfg.Fields.Text == "" && cfg.Fields.Structured == "" && cfg.Fields.Content == "" {
			d.errorf("fields", `output = "jsonl" needs fields.text, fields.structured or fields.content`)
		}
	default:
		d.errorf("output", "output must be %q, %q or %q, not %q", OutputText, OutputJSON, OutputJSONL, cfg.Output)
	}
	if cfg.Fields.Type == "" {
		c.raw.Fields.Type = "type"
	}
	if cfg.Fields.ResultType == "" {
		c.raw.Fields.ResultType = "result"
	}
	if cfg.Timeout != "" {
		c.timeout = positiveDuration(&d, "timeout", cfg.Timeout)
	}
	if cfg.TeardownGrace != "" {
		c.grace = positiveDuration(&d, "teardown_grace", cfg.TeardownGrace)
	}
	switch {
	case cfg.MaxOutputBytes < 0:
		d.errorf("max_output_bytes", "max_output_bytes must be positive")
	case cfg.MaxOutputBytes > 0:
		c.maxOutput = cfg.MaxOutputBytes
	}
	if cfg.MaxMemoryBytes < 0 {
		d.errorf("max_memory_bytes", "max_memory_bytes must not be negative")
	}
	checkNames(&d, "env", cfg.Env)
	checkNames(&d, "secrets_from_env", cfg.SecretsFromEnv)
	for i, r := range cfg.Failures {
		c.rules = append(c.rules, compileRule(&d, fmt.Sprintf("failures[%d]", i), r))
	}
	if d.hasErrors() {
		return nil, d
	}
	c.inherit = append(append([]string{}, BaseEnv...), cfg.Env...)
	c.redact = newRedactor(cfg.SecretsFromEnv)
	return c, d
}

func compileRule(d *diags, path string, r FailureRule) failureRule {
	out := failureRule{exitCode: r.ExitCode, kind: plugin.FailureKind(r.Kind), message: r.Message}
	if !out.kind.Valid() {
		d.errorf(path+".kind", "unknown failure kind %q; use one of %s", r.Kind, kindList())
	}
	re := func(field, expr string) *regexp.Regexp {
		if expr == "" {
			return nil
		}
		x, err := regexp.Compile(expr)
		if err != nil {
			d.errorf(path+"."+field, "not a valid regular expression: %v", err)
		}
		return x
	}
	out.stderr = re("stderr_matches", r.StderrMatches)
	out.stdout = re("stdout_matches", r.StdoutMatches)
	out.retryAfter = re("retry_after_capture", r.RetryAfterCapture)
	return out
}

func positiveDuration(d *diags, path, s string) time.Duration {
	v, err := time.ParseDuration(s)
	if err != nil || v <= 0 {
		d.errorf(path, "%q is not a positive duration such as \"90s\" or \"10m\"", s)
		return 0
	}
	return v
}

func checkNames(d *diags, path string, names []string) {
	for i, n := range names {
		if n == "" || strings.ContainsAny(n, "=\x00") {
			d.errorf(fmt.Sprintf("%s[%d]", path, i), "%q is not an environment variable name", n)
		}
	}
}

func containsPlaceholder(s string) bool {
	for _, p := range []string{PlaceholderPrompt, PlaceholderPromptFile, PlaceholderModel, PlaceholderProvider,
		PlaceholderModelFamily, PlaceholderWorkspace, PlaceholderSchema, PlaceholderSchemaFile} {
		if strings.Contains(s, p) {
			return true
		}
	}
	return false
}

func kindList() string {
	names := make([]string, len(plugin.FailureKinds))
	for i, k := range plugin.FailureKinds {
		names[i] = string(k)
	}
	return strings.Join(names, ", ")
}
