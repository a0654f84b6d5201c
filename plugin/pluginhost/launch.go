package pluginhost

import (
	"context"
	"errors"
	"fmt"
	"os/exec"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	"github.com/hashicorp/go-plugin/runner"
	"google.golang.org/grpc"

	"github.com/obversa/obversa/plugin"
)

// dispenseKey is the one entry of the go-plugin plugin set: the host
// dispenses it only to learn when the process has exited; the client
// shims are package plugin's.
const dispenseKey = "obversa"

// Handshake is plugin.Handshake as go-plugin's client takes it.
var Handshake = goplugin.HandshakeConfig{
	ProtocolVersion:  plugin.Handshake.ProtocolVersion,
	MagicCookieKey:   plugin.Handshake.MagicCookieKey,
	MagicCookieValue: plugin.Handshake.MagicCookieValue,
}

// Launch is plugin.LaunchWith on go-plugin's client: it starts a plugin
// from a verified copy of its binary, completes the handshake and returns
// the running plugin. Its errors are plugin.LaunchWith's.
func Launch(ctx context.Context, cfg plugin.LaunchConfig) (*plugin.Client, error) {
	return plugin.LaunchWith(ctx, cfg, NewTransport)
}

// NewTransport is the plugin.Transport of one launch on go-plugin's
// client: gRPC only, automatic mTLS with tc.TLS (the host's P-256
// certificate), the plugin's socket in tc.SocketDir, the host's
// environment not passed (the runner's command carries all of it).
func NewTransport(tc plugin.TransportConfig) plugin.Transport {
	return &transport{gp: goplugin.NewClient(&goplugin.ClientConfig{
		HandshakeConfig:  Handshake,
		VersionedPlugins: map[int]goplugin.PluginSet{plugin.ProtocolVersion: {dispenseKey: exitWatch{}}},
		RunnerFunc: func(_ hclog.Logger, spec *exec.Cmd, sockets string) (runner.Runner, error) {
			r, err := tc.Runner(spec.Env, sockets)
			if err != nil {
				return nil, err
			}
			return r, nil
		},
		UnixSocketConfig: &goplugin.UnixSocketConfig{TempDir: tc.SocketDir},
		AllowedProtocols: []goplugin.Protocol{goplugin.ProtocolGRPC},
		Managed:          false,
		TLSConfig:        tc.TLS,
		SkipHostEnv:      true,
		StartTimeout:     tc.StartTimeout,
		Logger:           tc.Logger,
		SyncStdout:       tc.Stdout,
		SyncStderr:       tc.Stderr,
		GRPCDialOptions:  tc.Dial,
	})}
}

// transport is a plugin.Transport on a go-plugin client.
type transport struct {
	gp *goplugin.Client
}

// errNotGRPC is a plugin that negotiated net/rpc.
var errNotGRPC = errors.New("negotiated a non-gRPC protocol")

// Start implements plugin.Transport.
func (t *transport) Start() error {
	_, err := t.gp.Start()
	return err
}

// Conn implements plugin.Transport.
func (t *transport) Conn() (*grpc.ClientConn, context.Context, error) {
	rpc, err := t.gp.Client()
	if err != nil {
		return nil, nil, err
	}
	gc, ok := rpc.(*goplugin.GRPCClient)
	if !ok {
		return nil, nil, errNotGRPC
	}
	raw, err := rpc.Dispense(dispenseKey)
	if err != nil {
		return nil, nil, fmt.Errorf("dispensing: %w", err)
	}
	return gc.Conn, raw.(exited).done, nil
}

// Kill implements plugin.Transport: go-plugin's graceful stop (the
// controller's Shutdown, up to 2 s), then SIGKILL.
func (t *transport) Kill() { t.gp.Kill() }

// Exited implements plugin.Transport.
func (t *transport) Exited() bool { return t.gp.Exited() }

// exitWatch is the go-plugin glue of the one plugin-set entry: dispensed,
// it hands over the context go-plugin ends when the process exits.
type exitWatch struct {
	goplugin.NetRPCUnsupportedPlugin
}

// exited is what exitWatch dispenses.
type exited struct{ done context.Context }

// errHostOnly is exitWatch's plugin side, never used: plugins serve
// through plugin.Serve.
var errHostOnly = errors.New("pluginhost: the go-plugin glue is the host's; plugins serve through plugin.Serve")

// GRPCServer implements goplugin.GRPCPlugin; it is never used.
func (exitWatch) GRPCServer(*goplugin.GRPCBroker, *grpc.Server) error { return errHostOnly }

// GRPCClient implements goplugin.GRPCPlugin.
func (exitWatch) GRPCClient(done context.Context, _ *goplugin.GRPCBroker, _ *grpc.ClientConn) (any, error) {
	return exited{done: done}, nil
}
