package launch

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/obversa/obversa/host/plan"
	"github.com/obversa/obversa/internal/runecut"
	"github.com/obversa/obversa/plugin"
)

// greet checks the health of r's launched plugin (o.HealthTimeout, 5 s
// when 0), dispenses its type, and asks it to describe itself and to take
// p's configuration (o.GreetTimeout each), keeping the answers in r.
// Errors name the plugin: a failed call's, or a call not answered in
// time (both wrapped with ErrStart), ErrType for a type
// the plugin does not serve, a *ConfigError for error diagnostics.
func (r *started) greet(ctx context.Context, p plan.PluginPlan, o Options) error {
	c := r.client
	ht := o.HealthTimeout
	if ht == 0 {
		ht = 5 * time.Second
	}
	hctx, cancel := context.WithTimeout(ctx, ht)
	err := c.Health(hctx)
	cancel()
	if err != nil && ctx.Err() == nil && hctx.Err() != nil {
		return startFailed(fmt.Errorf("plugin %q did not answer its health check within %s (the host's fixed bound; docs/writing-plugins.md): %w", p.Name, ht, err))
	}
	if err != nil {
		return startFailed(fmt.Errorf("plugin %q health check: %w", p.Name, err))
	}
	// Every plugin type answers Describe and Configure the same way.
	d := c.Describer()
	switch plugin.Type(p.Type) {
	case plugin.TypeEngine:
		if r.engine, err = c.Engine(); err != nil {
			return fmt.Errorf("plugin %q: %w", p.Name, err)
		}
	case plugin.TypePolicy:
		if r.policy, err = c.Policy(); err != nil {
			return fmt.Errorf("plugin %q: %w", p.Name, err)
		}
	default:
		if r.binding, err = c.Node(); err != nil {
			return fmt.Errorf("plugin %q: %w", p.Name, err)
		}
	}
	gt := o.GreetTimeout
	if gt == 0 {
		gt = DefaultGreetTimeout
	}
	var desc *plugin.Description
	if err := greetCall(ctx, gt, p.Name, "Describe", func(ctx context.Context) (err error) {
		desc, err = d.Describe(ctx)
		return err
	}); err != nil {
		return err
	}
	if !plugin.ValidDescribedName(desc.Name) {
		return describedNameError(p.Name, desc.Name)
	}
	var diags []plugin.Diagnostic
	if err := greetCall(ctx, gt, p.Name, "Configure", func(ctx context.Context) (err error) {
		diags, err = d.Configure(ctx, p.Config)
		return err
	}); err != nil {
		return err
	}
	if len(desc.Types) > 0 && !slices.Contains(desc.Types, plugin.Type(p.Type)) {
		return fmt.Errorf("%w: plugin %q (%s) serves %v, the run file declares type %q", ErrType, p.Name, p.Source, desc.Types, p.Type)
	}
	r.desc = desc
	for _, d := range diags {
		if d.Severity == plugin.SeverityError {
			return &ConfigError{Plugin: p.Name, Diagnostics: diags}
		}
	}
	r.diags = diags
	return nil
}

// greetCall makes one of a plugin's greeting calls (Describe, Configure)
// within timeout, naming the plugin and the call in its error. Every
// error matches ErrStart; one past timeout matches
// context.DeadlineExceeded too, so callers need not read its words.
func greetCall(ctx context.Context, timeout time.Duration, name, call string, f func(context.Context) error) error {
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err := f(cctx)
	switch {
	case err == nil:
		return nil
	case ctx.Err() == nil && cctx.Err() != nil:
		return startFailed(fmt.Errorf("plugin %q did not answer %s within %s (the host's fixed bound, %w); it must answer from what it has at hand (docs/writing-plugins.md): fix the plugin or its config", name, call, timeout, context.DeadlineExceeded))
	}
	return startFailed(fmt.Errorf("plugin %q %s: %w", name, strings.ToLower(call), err))
}

// describedNameError refuses the name a plugin gave in Describe that does
// not follow plugin.ValidDescribedName, naming the plugin block; ErrStart.
// The name is the plugin's and may be of any length: it is quoted cut to
// runecut.EchoBytes.
func describedNameError(block, name string) error {
	return startFailed(fmt.Errorf("plugin %q described itself as %q, which does not follow the name grammar %s (docs/writing-plugins.md): fix the plugin", block, runecut.Bound(name, runecut.EchoBytes), plugin.DescribedNameGrammar))
}

// startFailed marks err as a failure of a plugin's greeting (ErrStart)
// without changing its message; a plugin that does not serve the type
// asked of it keeps only its own plugin.ErrWrongType.
func startFailed(err error) error {
	if errors.Is(err, plugin.ErrWrongType) {
		return err
	}
	return &greetError{err: err}
}

// greetError is a failure of a plugin's greeting: it matches ErrStart and
// the cause, and reads as the cause.
type greetError struct{ err error }

// Error reads as the cause.
func (e *greetError) Error() string { return e.err.Error() }

// Unwrap matches ErrStart and the cause.
func (e *greetError) Unwrap() []error { return []error{ErrStart, e.err} }
