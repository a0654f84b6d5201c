package plugin

import (
	"context"
	"crypto/tls"
	"io"
	"time"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc"
)

// Transport is the host's side of go-plugin's protocol for one launch:
// it starts the plugin process, reads its handshake line and dials it.
// Package plugin/pluginhost provides the one Obversa uses, on
// hashicorp/go-plugin's client; it lives there so that package plugin,
// which every Go plugin links, does not link go-plugin
// (docs/decisions.md, "Go plugins serve go-plugin's protocol
// themselves").
type Transport interface {
	// Start starts the process through the TransportConfig's Runner and
	// completes the handshake. Its error is go-plugin's, which LaunchWith
	// turns into a *StartError.
	Start() error
	// Conn returns the gRPC connection to the started plugin and a
	// context that ends when the process has exited. Its error is a
	// failed connection.
	Conn() (conn *grpc.ClientConn, done context.Context, err error)
	// Kill stops the process — the plugin's controller Shutdown, a short
	// wait, then a forced kill — and returns once it has ended.
	Kill()
	// Exited reports whether the process has exited.
	Exited() bool
}

// TransportConfig is what a Transport gets for one launch.
type TransportConfig struct {
	// Runner makes the plugin's process runner once the Transport knows
	// the variables of its protocol, env ("KEY=value"), which the process
	// gets besides its own, and the directory it made in SocketDir for
	// the plugin's socket (removed when the plugin ends).
	Runner func(env []string, sockets string) (ProcessRunner, error)
	// TLS is the host's mutual TLS; the Transport adds the certificate
	// the handshake line names as the only root.
	TLS *tls.Config
	// Dial are the gRPC options to dial the plugin with.
	Dial []grpc.DialOption
	// SocketDir is the directory the plugin makes its socket in.
	SocketDir string
	// StartTimeout bounds the wait for the handshake line.
	StartTimeout time.Duration
	// Logger receives the Transport's messages and the plugin's stderr.
	Logger hclog.Logger
	// Stdout and Stderr receive what the plugin writes to os.Stdout and
	// os.Stderr after its handshake (go-plugin's stdio service).
	Stdout, Stderr io.Writer
}

// ProcessRunner is a plugin process as the Transport drives it: the
// method set of go-plugin's runner.Runner, which LaunchWith's runner
// implements (its stdout after the handshake line, its stderr tail,
// its process group; plugin/runner.go).
type ProcessRunner interface {
	// Start starts the process.
	Start(ctx context.Context) error
	// Diagnose returns what may explain a failed start ("" here).
	Diagnose(ctx context.Context) string
	// Stdout is the process's handshake line.
	Stdout() io.ReadCloser
	// Stderr is the process's standard error.
	Stderr() io.ReadCloser
	// Name names the process's executable.
	Name() string
	// Wait waits for the process to end.
	Wait(ctx context.Context) error
	// Kill kills the process.
	Kill(ctx context.Context) error
	// ID is the process id.
	ID() string
	// PluginToHost translates an address the plugin names.
	PluginToHost(pluginNet, pluginAddr string) (hostNet, hostAddr string, err error)
	// HostToPlugin translates an address the host names.
	HostToPlugin(hostNet, hostAddr string) (pluginNet, pluginAddr string, err error)
}

// NewTransport makes the Transport of one launch.
type NewTransport func(TransportConfig) Transport
