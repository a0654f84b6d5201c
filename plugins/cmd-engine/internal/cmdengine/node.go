package cmdengine

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/obversa/obversa/plugin"
	"github.com/obversa/obversa/sdk/command"
)

// Defaults of the node binding.
const (
	// DefaultNodeTimeout bounds one node command when neither the input,
	// the configuration nor the attempt sets a shorter one.
	DefaultNodeTimeout = 10 * time.Minute
	// DefaultNodeMaxOutputBytes caps stdout and stderr each.
	DefaultNodeMaxOutputBytes = 1 << 20
)

// NodeConfig is the node binding's `config` block; every field is
// optional.
type NodeConfig struct {
	// MaxOutputBytes caps stdout and stderr each (default 1 MiB).
	MaxOutputBytes int64 `json:"max_output_bytes,omitempty"`
	// MaxMemoryBytes caps the command tree's resident memory; 0: no cap.
	MaxMemoryBytes int64 `json:"max_memory_bytes,omitempty"`
	// Timeout is the default per command (Go duration, default "10m").
	Timeout string `json:"timeout,omitempty"`
	// TeardownGrace is the wait between SIGTERM and SIGKILL (default 2s).
	TeardownGrace string `json:"teardown_grace,omitempty"`
	// Env names variables commands inherit, besides BaseEnv.
	Env []string `json:"env,omitempty"`
	// SecretsFromEnv names variables whose values are redacted from the
	// output and failure messages.
	SecretsFromEnv []string `json:"secrets_from_env,omitempty"`
}

// NodeInput is a node's `input`: the command to run.
type NodeInput struct {
	// Command is the argv; required. No shell is involved.
	Command []string `json:"command"`
	// Stdin is written to the command's standard input.
	Stdin *string `json:"stdin,omitempty"`
	// Timeout overrides the configured one (Go duration); the attempt's
	// deadline still applies when shorter.
	Timeout string `json:"timeout,omitempty"`
	// Env sets variables for this command.
	Env map[string]string `json:"env,omitempty"`
}

// NodeOutput is a successful node's output.
type NodeOutput struct {
	ExitCode int    `json:"exit_code"` // always 0: other exits fail the node
	Stdout   string `json:"stdout"`    // captured standard output, redacted
	Stderr   string `json:"stderr"`    // captured standard error, redacted
}

// Node is the command node binding. Create it with NewNode; it works
// unconfigured with the defaults. Methods are safe for concurrent use.
type Node struct {
	mu  sync.Mutex
	cfg *nodeConfig
}

var _ plugin.NodeBinding = (*Node)(nil)

type nodeConfig struct {
	maxOutput, maxMemory int64
	timeout, grace       time.Duration
	inherit              []string
	redact               *redactor
}

func defaultNodeConfig() *nodeConfig {
	return &nodeConfig{maxOutput: DefaultNodeMaxOutputBytes, timeout: DefaultNodeTimeout, inherit: BaseEnv, redact: &redactor{}}
}

// NewNode returns a node binding with the default configuration.
func NewNode() *Node { return &Node{cfg: defaultNodeConfig()} }

// Describe reports the cmd plugin (see description).
func (n *Node) Describe(context.Context) (*plugin.Description, error) {
	return description(), nil
}

// Configure validates config (NodeConfig as JSON; nil or null keeps the
// defaults). With error diagnostics the previous configuration stays in
// force. The Go error is always nil.
func (n *Node) Configure(_ context.Context, config json.RawMessage) ([]plugin.Diagnostic, error) {
	c, d := decodeNodeConfig(config)
	if c != nil {
		n.mu.Lock()
		n.cfg = c
		n.mu.Unlock()
	}
	return d, nil
}

func decodeNodeConfig(raw json.RawMessage) (*nodeConfig, []plugin.Diagnostic) {
	c := defaultNodeConfig()
	if t := strings.TrimSpace(string(raw)); t == "" || t == "null" {
		return c, nil
	}
	var d diags
	var cfg NodeConfig
	if !decodeStrict(&d, raw, &cfg, "cmd node config") {
		return nil, d
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
	c.maxMemory = cfg.MaxMemoryBytes
	if cfg.Timeout != "" {
		c.timeout = positiveDuration(&d, "timeout", cfg.Timeout)
	}
	if cfg.TeardownGrace != "" {
		c.grace = positiveDuration(&d, "teardown_grace", cfg.TeardownGrace)
	}
	checkNames(&d, "env", cfg.Env)
	checkNames(&d, "secrets_from_env", cfg.SecretsFromEnv)
	if d.hasErrors() {
		return nil, d
	}
	c.inherit = append(append([]string{}, BaseEnv...), cfg.Env...)
	c.redact = newRedactor(cfg.SecretsFromEnv)
	return c, d
}

// decodeNodeInput validates a node's input; problems are invalid_config
// failures naming the attribute.
func decodeNodeInput(raw json.RawMessage) (*NodeInput, time.Duration, error) {
	var d diags
	var in NodeInput
	if decodeStrict(&d, raw, &in, "cmd node input") {
		if len(in.Command) == 0 || in.Command[0] == "" {
			d.errorf("command", `command is required, e.g. ["go", "vet", "./..."]`)
		}
		for i, a := range in.Command {
			if strings.ContainsRune(a, 0) {
				d.errorf(fmt.Sprintf("command[%d]", i), "arguments may not contain NUL bytes")
			}
		}
		for k, v := range in.Env {
			if k == "" || strings.ContainsAny(k, "=\x00") || strings.ContainsRune(v, 0) {
				d.errorf("env", "%q is not a valid environment variable", k)
			}
		}
	}
	var timeout time.Duration
	if in.Timeout != "" {
		timeout = positiveDuration(&d, "timeout", in.Timeout)
	}
	if d.hasErrors() {
		var msgs []string
		for _, x := range d {
			if x.Attribute != "" {
				msgs = append(msgs, "input."+x.Attribute+": "+x.Summary)
			} else {
				msgs = append(msgs, x.Summary)
			}
		}
		return nil, 0, &plugin.Failure{Kind: plugin.FailureInvalidConfig, Message: strings.Join(msgs, "; ")}
	}
	return &in, timeout, nil
}

// Invoke runs the input's command in the workspace and returns NodeOutput
// as JSON (output that is not UTF-8 gets U+FFFD replacements). Its timeout is the shortest of the attempt's, and the input's
// or else the configured one. Failures: invalid_config for a bad input,
// missing_cli when the program is not found, timeout, aborted, and unknown
// for a non-zero exit (the message has the exit code and the tail of stderr,
// or of stdout when stderr is empty) or
// a stopped command (output or memory cap, with the stable code in the
// message).
func (n *Node) Invoke(ctx context.Context, req plugin.InvokeRequest) (json.RawMessage, error) {
	n.mu.Lock()
	c := n.cfg
	n.mu.Unlock()
	in, inTimeout, err := decodeNodeInput(req.Input)
	if err != nil {
		return nil, err
	}
	timeout := c.timeout
	if inTimeout > 0 {
		timeout = inTimeout
	}
	if req.Timeout > 0 && req.Timeout < timeout {
		timeout = req.Timeout
	}
	if err := ctx.Err(); err != nil {
		return nil, ctxFailure(err)
	}
	creq := command.Request{
		Argv: in.Command, Dir: req.WorkspaceDir, InheritEnv: c.inherit, Env: envList(in.Env),
		Timeout: timeout, TeardownGrace: c.grace, MaxOutputBytes: c.maxOutput, MaxMemoryBytes: c.maxMemory,
		AttemptID: req.AttemptID, RunID: req.RunID,
	}
	if in.Stdin != nil {
		creq.Stdin = []byte(*in.Stdin)
	}
	argv0 := in.Command[0]
	res, runErr := command.Run(ctx, creq)
	if runErr != nil && res == nil {
		f := spawnFailure(argv0, runErr)
		f.Message = c.redact.str(f.Message)
		return nil, f
	}
	if f := stopFailure(argv0, res, runErr, timeout); f != nil {
		f.Message = c.redact.str(f.Message)
		return nil, f
	}
	if res.ExitCode != 0 {
		return nil, &plugin.Failure{Kind: plugin.FailureUnknown, Message: c.redact.str(exitMessage(argv0, res))}
	}
	out, err := json.Marshal(NodeOutput{
		ExitCode: res.ExitCode,
		Stdout:   c.redact.str(string(res.Stdout)),
		Stderr:   c.redact.str(string(res.Stderr)),
	})
	if err != nil {
		return nil, &plugin.Failure{Kind: plugin.FailureUnknown, Message: "encode output: " + err.Error()}
	}
	return out, nil
}

// envList renders a map as sorted NAME=value entries.
func envList(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}
