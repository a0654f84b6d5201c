package cmdengine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/obversa/obversa/plugin"
	"github.com/obversa/obversa/sdk/command"
)

// Engine adapts a model CLI. Create it with NewEngine; it refuses calls
// until Configure accepted a configuration. Methods are safe for
// concurrent use.
type Engine struct {
	mu  sync.Mutex
	cfg *engineConfig
}

var _ plugin.Engine = (*Engine)(nil)

// NewEngine returns an unconfigured engine.
func NewEngine() *Engine { return &Engine{} }

// Describe reports the cmd plugin (see description).
func (e *Engine) Describe(context.Context) (*plugin.Description, error) {
	return description(), nil
}

// Configure validates config (EngineConfig as JSON). With error
// diagnostics the previous configuration stays in force. Secret values are
// read from the environment now. The Go error is always nil.
func (e *Engine) Configure(_ context.Context, config json.RawMessage) ([]plugin.Diagnostic, error) {
	c, d := decodeEngineConfig(config)
	if c != nil {
		e.mu.Lock()
		e.cfg = c
		e.mu.Unlock()
	}
	return d, nil
}

func (e *Engine) config() (*engineConfig, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.cfg == nil {
		return nil, &plugin.Failure{Kind: plugin.FailureInvalidConfig, Message: "cmd engine is not configured: set config.command"}
	}
	return e.cfg, nil
}

// Admit resolves the configured executable on PATH and checks that the
// target names a model when the command needs {model}. It runs nothing.
// Errors: missing_cli when the executable is not found, invalid_config
// when unconfigured or the model is missing.
func (e *Engine) Admit(ctx context.Context, req plugin.AdmitRequest) (*plugin.AdmitResponse, error) {
	c, err := e.config()
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, &plugin.Failure{Kind: plugin.FailureAborted, Message: err.Error()}
	}
	if err := c.checkTarget(req.Target); err != nil {
		return nil, err
	}
	argv0 := c.raw.Command[0]
	if _, err := exec.LookPath(argv0); err != nil {
		return nil, &plugin.Failure{Kind: plugin.FailureMissingCLI, Message: c.redact.str(err.Error()),
			Provider: req.Target.Provider, Model: req.Target.Model}
	}
	return &plugin.AdmitResponse{Supported: true, Selection: req.Target}, nil
}

func (c *engineConfig) checkTarget(t plugin.Identity) error {
	if c.usesModel && t.Model == "" {
		return &plugin.Failure{Kind: plugin.FailureInvalidConfig,
			Message: "the command uses {model} but the target names no model", Provider: t.Provider}
	}
	return nil
}

// Run runs the CLI once (see the package doc) and returns its answer. The
// working directory is the workspace, or for calls without one (preflight
// probes) a temporary directory that is removed afterwards.
func (e *Engine) Run(ctx context.Context, req plugin.RunRequest, emit plugin.Emitter) (*plugin.RunResult, error) {
	c, err := e.config()
	if err != nil {
		return nil, err
	}
	res, err := c.run(ctx, req, emit)
	if err != nil {
		var f *plugin.Failure
		if errors.As(err, &f) {
			f.Message = c.redact.str(f.Message)
			if f.Provider == "" && f.Model == "" {
				f.Provider, f.Model = req.Target.Provider, req.Target.Model
			}
		}
		return nil, err
	}
	return res, nil
}

func (c *engineConfig) run(ctx context.Context, req plugin.RunRequest, emit plugin.Emitter) (*plugin.RunResult, error) {
	if err := c.checkTarget(req.Target); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, ctxFailure(err)
	}
	tmp, err := os.MkdirTemp("", "obversa-cmd-")
	if err != nil {
		return nil, &plugin.Failure{Kind: plugin.FailureUnknown, Message: "temporary directory: " + err.Error()}
	}
	defer os.RemoveAll(tmp)
	argv, stdin, err := c.expand(req, tmp)
	if err != nil {
		return nil, err
	}
	dir := req.WorkspaceDir
	if dir == "" {
		dir = tmp
	}
	timeout := c.timeout
	if req.Timeout > 0 && req.Timeout < timeout {
		timeout = req.Timeout
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var stream *lineStream
	creq := command.Request{
		Argv: argv, Dir: dir, InheritEnv: c.inherit, Stdin: stdin,
		Timeout: timeout, TeardownGrace: c.grace,
		MaxOutputBytes: c.maxOutput, MaxMemoryBytes: c.raw.MaxMemoryBytes,
		AttemptID: req.AttemptID, RunID: req.RunID,
	}
	if c.raw.Output == OutputJSONL {
		stream = &lineStream{fields: &c.raw.Fields, redact: c.redact, emit: emit, stop: cancel}
		creq.StdoutTee = stream
	}
	res, runErr := command.Run(runCtx, creq)
	if runErr != nil && res == nil {
		return nil, spawnFailure(argv[0], runErr)
	}
	if stream != nil && stream.emitErr != nil {
		return nil, &plugin.Failure{Kind: plugin.FailureAborted, Message: "event stream closed: " + stream.emitErr.Error()}
	}
	if f := stopFailure(argv[0], res, runErr, timeout); f != nil {
		return nil, f
	}

	var a *answer
	switch c.raw.Output {
	case OutputJSONL:
		a = stream.finish()
	case OutputJSON:
		var ok bool
		if a, ok = parseJSONOutput(res.Stdout, &c.raw.Fields); !ok {
			if res.ExitCode == 0 {
				return nil, &plugin.Failure{Kind: plugin.FailureUnknown,
					Message: fmt.Sprintf("%s printed no JSON object: %s", argv[0], tail(res.Stdout))}
			}
			a = &answer{}
		}
	default:
		text := strings.TrimRight(string(res.Stdout), "\r\n")
		a = &answer{text: &text}
	}
	if res.ExitCode != 0 || a.isError {
		msg := exitMessage(argv[0], res)
		if res.ExitCode == 0 {
			msg = argv[0] + " reported an error"
		}
		if a.errorMessage != "" && (a.isError || res.ExitCode != 0) {
			msg += ": " + tail([]byte(a.errorMessage))
		}
		return nil, classify(c.rules, callFailure{exitCode: res.ExitCode, stdout: res.Stdout, stderr: res.Stderr, message: msg})
	}
	return c.result(req, a, emit)
}

// result assembles the final result and sends the usage event.
func (c *engineConfig) result(req plugin.RunRequest, a *answer, emit plugin.Emitter) (*plugin.RunResult, error) {
	var final plugin.Part
	switch {
	case a.structured != nil:
		final = plugin.Part{Kind: plugin.PartStructured, JSON: c.redact.json(a.structured), Final: true}
	case a.text != nil:
		final = plugin.Part{Kind: plugin.PartText, Text: c.redact.str(*a.text), Final: true}
		// Asked for structured output, a CLI in text mode may still print
		// JSON: keep it structured then.
		if len(req.OutputSchema) > 0 && json.Valid([]byte(strings.TrimSpace(final.Text))) {
			final = plugin.Part{Kind: plugin.PartStructured, JSON: json.RawMessage(strings.TrimSpace(final.Text)), Final: true}
		}
	case len(a.textBlocks) > 0:
		final = plugin.Part{Kind: plugin.PartText, Text: strings.Join(a.textBlocks, ""), Final: true}
		a.parts = dropTextParts(a.parts)
	default:
		return nil, &plugin.Failure{Kind: plugin.FailureUnknown, Message: c.raw.Command[0] + " gave no answer: no result found in its output"}
	}
	parts := a.parts
	// The last streamed text block usually repeats the final answer.
	if n := len(parts); n > 0 && final.Kind == plugin.PartText && parts[n-1].Kind == plugin.PartText && parts[n-1].Text == final.Text {
		parts = parts[:n-1]
	}
	parts = append(append([]plugin.Part{}, parts...), final)
	effective := req.Target
	if a.model != "" {
		effective.Model = a.model
	}
	if a.usage.Known && emit != nil {
		if err := emit(plugin.RunEvent{Kind: plugin.EventUsage, Usage: a.usage}); err != nil {
			return nil, &plugin.Failure{Kind: plugin.FailureAborted, Message: "event stream closed: " + err.Error()}
		}
	}
	stop := a.stopReason
	if stop == "" {
		stop = "end_turn"
	}
	return &plugin.RunResult{Parts: parts, Usage: a.usage, Requested: req.Target, Effective: effective, StopReason: stop}, nil
}

func dropTextParts(parts []plugin.Part) []plugin.Part {
	out := parts[:0:0]
	for _, p := range parts {
		if p.Kind != plugin.PartText {
			out = append(out, p)
		}
	}
	return out
}

// expand fills the argv template for req, writing the prompt and schema
// files into dir when the template uses them, and returns the stdin bytes
// (nil unless the prompt goes on stdin).
func (c *engineConfig) expand(req plugin.RunRequest, dir string) ([]string, []byte, error) {
	write := func(name string, data []byte) (string, error) {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			return "", &plugin.Failure{Kind: plugin.FailureUnknown, Message: "write " + name + ": " + err.Error()}
		}
		return p, nil
	}
	schema := string(req.OutputSchema)
	if schema == "" {
		schema = "{}"
	}
	workspace := req.WorkspaceDir
	if workspace == "" {
		workspace = dir
	}
	pairs := []string{
		PlaceholderModel, req.Target.Model,
		PlaceholderProvider, req.Target.Provider,
		PlaceholderModelFamily, req.Target.ModelFamily,
		PlaceholderWorkspace, workspace,
		PlaceholderSchema, schema,
	}
	joined := strings.Join(c.raw.Command, "\x00")
	if c.usesPromptFile {
		p, err := write("prompt.txt", []byte(req.Prompt))
		if err != nil {
			return nil, nil, err
		}
		pairs = append(pairs, PlaceholderPromptFile, p)
	}
	if strings.Contains(joined, PlaceholderSchemaFile) {
		p, err := write("schema.json", []byte(schema))
		if err != nil {
			return nil, nil, err
		}
		pairs = append(pairs, PlaceholderSchemaFile, p)
	}
	arg := c.raw.PromptVia == PromptViaArg
	if arg {
		pairs = append(pairs, PlaceholderPrompt, req.Prompt)
	}
	r := strings.NewReplacer(pairs...)
	argv := make([]string, len(c.raw.Command))
	for i, a := range c.raw.Command {
		argv[i] = r.Replace(a)
	}
	if arg && !strings.Contains(joined, PlaceholderPrompt) {
		argv = append(argv, req.Prompt)
	}
	if strings.ContainsRune(strings.Join(argv, ""), 0) {
		return nil, nil, &plugin.Failure{Kind: plugin.FailureInvalidConfig, Message: "the prompt or target contains a NUL byte and cannot be passed as an argument"}
	}
	var stdin []byte
	if c.raw.PromptVia == "" || c.raw.PromptVia == PromptViaStdin {
		stdin = []byte(req.Prompt)
	}
	return argv, stdin, nil
}

// ctxFailure maps an ended context: timeout for an expired deadline,
// aborted otherwise.
func ctxFailure(err error) *plugin.Failure {
	if errors.Is(err, context.DeadlineExceeded) {
		return &plugin.Failure{Kind: plugin.FailureTimeout, Message: "deadline exceeded before the call started"}
	}
	return &plugin.Failure{Kind: plugin.FailureAborted, Message: "cancelled before the call started"}
}
