package sdk

import (
	"context"
	"fmt"

	"github.com/hashicorp/go-hclog"

	"github.com/obversa/obversa/plugin"
)

// ServeOpt configures Serve.
type ServeOpt func(*serveConfig)

type serveConfig struct {
	engine Engine
	node   NodeBinding
	policy Policy
	logger hclog.Logger
	health func(context.Context) bool
	conf   plugin.Conformance
}

// WithEngine serves e as the plugin's engine.
func WithEngine(e Engine) ServeOpt {
	return func(c *serveConfig) { c.engine = e }
}

// WithNode serves n as the plugin's node binding.
func WithNode(n NodeBinding) ServeOpt {
	return func(c *serveConfig) { c.node = n }
}

// WithPolicy serves p as the plugin's action policy (docs/policies.md).
func WithPolicy(p Policy) ServeOpt {
	return func(c *serveConfig) { c.policy = p }
}

// WithLogger sets the logger for the plugin's serving machinery (handler
// panics, invalid results, go-plugin's messages). It should write hclog
// JSON to standard error, as Logger does; the default is Logger("").
func WithLogger(l hclog.Logger) ServeOpt {
	return func(c *serveConfig) { c.logger = l }
}

// WithHealth sets the answer to the host's health check (grpc.health.v1
// Check for service "plugin"): fn returns true for SERVING, false for
// NOT_SERVING, which makes the host's preflight fail for this plugin. fn gets
// the check's context and should return before it ends. Without it the
// plugin is SERVING while it runs.
func WithHealth(fn func(ctx context.Context) bool) ServeOpt {
	return func(c *serveConfig) { c.health = fn }
}

// WithConformance serves c as the optional Conformance service: scenario
// control for the conformance kit (sdk/conformance), which uses it to make
// the plugin produce each failure kind, a delay, unknown usage, tool events
// and the other scenarios it checks. Without it the service is served when
// the engine itself implements Conformance, and not at all otherwise. The
// host never calls it during a run.
func WithConformance(c plugin.Conformance) ServeOpt {
	return func(cfg *serveConfig) { cfg.conf = c }
}

// Serve serves what WithEngine, WithNode and WithPolicy give until the
// host closes the plugin, then returns nil. It returns an error wrapping
// plugin.ErrServeConfig at once if none is given. Started
// by hand rather than by the host, it prints an explanation and exits with
// status 1.
func Serve(opts ...ServeOpt) error {
	var c serveConfig
	for _, o := range opts {
		o(&c)
	}
	if c.logger == nil {
		c.logger = Logger("")
	}
	if err := plugin.Serve(plugin.ServeConfig{Engine: c.engine, Node: c.node, Policy: c.policy, Logger: c.logger, Health: c.health, Conformance: c.conf}); err != nil {
		return fmt.Errorf("sdk: %w", err)
	}
	return nil
}

// ServeEngine serves impl as an engine plugin; see Serve. opts may add a
// node binding, a logger or a health check.
func ServeEngine(impl Engine, opts ...ServeOpt) error {
	return Serve(append([]ServeOpt{WithEngine(impl)}, opts...)...)
}

// ServeNode serves impl as a node binding plugin; see Serve.
func ServeNode(impl NodeBinding, opts ...ServeOpt) error {
	return Serve(append([]ServeOpt{WithNode(impl)}, opts...)...)
}

// ServePolicy serves impl as an action policy plugin (docs/policies.md);
// see Serve. The host asks impl.Decide before every attempt's effects;
// an error or a panic there pauses the position, never allows it.
func ServePolicy(impl Policy, opts ...ServeOpt) error {
	return Serve(append([]ServeOpt{WithPolicy(impl)}, opts...)...)
}
