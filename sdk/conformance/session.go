package conformance

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/obversa/obversa/plugin"
	"github.com/obversa/obversa/plugin/pluginhost"
)

// session is one plugin process launched as the host launches it.
type session struct {
	c      *plugin.Client
	engine plugin.Engine
	node   plugin.NodeBinding
	policy plugin.Policy
}

// launch starts the plugin through plugin.Launch, as a run would.
func (k *kit) launch(ctx context.Context) (*session, error) {
	return k.launchLogged(ctx, k.logger)
}

// launchLogged is launch with the plugin's log lines sent to logger.
func (k *kit) launchLogged(ctx context.Context, logger hclog.Logger) (*session, error) {
	c, err := pluginhost.Launch(ctx, plugin.LaunchConfig{
		Name: "conformance", Type: k.typ, Path: k.bin, SHA256: k.sha, Verified: true,
		Args: k.opts.Args, Env: k.env, Logger: logger, StartTimeout: k.opts.handshakeTimeout(),
	})
	if err != nil {
		return nil, err
	}
	s := &session{c: c}
	switch k.typ {
	case plugin.TypeEngine:
		s.engine, err = c.Engine()
	case plugin.TypePolicy:
		s.policy, err = c.Policy()
	default:
		s.node, err = c.Node()
	}
	if err != nil {
		_ = c.Kill() // it logs what it could not stop
		return nil, err
	}
	return s, nil
}

// launchConfigured launches the plugin and configures it with the options'
// configuration; error diagnostics are an error.
func (k *kit) launchConfigured(ctx context.Context) (*session, error) {
	s, err := k.launch(ctx)
	if err != nil {
		return nil, err
	}
	diags, err := s.configure(ctx, k.opts.Config)
	if err == nil {
		if msg := errorDiagnostics(diags); msg != "" {
			err = errors.New("Configure refused the configuration: " + msg)
		}
	}
	if err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

// closeGrace bounds the graceful stop of a session before it is killed.
const closeGrace = 250 * time.Millisecond

// close stops the process as the host does, through the controller (so
// that the plugin removes its socket), but waits at most closeGrace before
// killing it: robust.shutdown tests the graceful stop, and a plugin that
// ignores it must not slow every other case down.
func (s *session) close() {
	ctx, cancel := context.WithTimeout(context.Background(), closeGrace)
	defer cancel()
	_ = s.c.Shutdown(ctx)
	_ = s.c.Kill() // it logs what it could not stop
}

func (s *session) describe(ctx context.Context) (*plugin.Description, error) {
	return s.c.Describer().Describe(ctx)
}

func (s *session) configure(ctx context.Context, raw []byte) ([]plugin.Diagnostic, error) {
	return s.c.Describer().Configure(ctx, raw)
}

// serving checks that the plugin still answers Describe and has not exited.
func (s *session) serving(ctx context.Context) error {
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := s.describe(dctx); err != nil {
		return fmt.Errorf("Describe afterwards: %w", err)
	}
	if s.c.Exited() {
		return errors.New("the process exited")
	}
	return nil
}

// errorDiagnostics joins the error-severity diagnostics, "" when none.
func errorDiagnostics(ds []plugin.Diagnostic) string {
	var msgs []string
	for _, d := range ds {
		if d.Severity == plugin.SeverityError {
			m := d.Summary
			if d.Attribute != "" {
				m = d.Attribute + ": " + m
			}
			msgs = append(msgs, m)
		}
	}
	return strings.Join(msgs, "; ")
}
