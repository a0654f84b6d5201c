package plugin

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc"
)

// stderr is the process's standard error as it was before Serve pointed
// os.Stderr at the stdio service (serve_stdio.go); plugin logs must reach
// the real stderr, where the host parses them.
var stderr = os.Stderr

// notAPlugin is what Serve prints when the binary is run by hand.
const notAPlugin = "This binary is an Obversa plugin: obversa starts it (docs/writing-plugins.md).\n" +
	"It is not meant to be run by hand.\n"

// ServeConfig says what a plugin binary serves. At least one of Engine,
// Node and Policy is set.
type ServeConfig struct {
	// Engine is served under the plugin-set key "engine"; nil = not served.
	Engine Engine
	// Node is served under the plugin-set key "node"; nil = not served.
	Node NodeBinding
	// Policy is served under the plugin-set key "policy"; nil = not served.
	Policy Policy
	// Logger receives the plugin's own log lines. It should write hclog
	// JSON to standard error, which the host re-logs; nil = such a logger
	// at trace level (the host filters by its own level).
	Logger hclog.Logger
	// Health answers the host's grpc.health.v1 Check for service "plugin":
	// true = SERVING, false = NOT_SERVING. It receives the call's context and
	// should return when it ends. nil = always SERVING.
	Health func(ctx context.Context) bool
	// Conformance is served as the optional Conformance service, scenario
	// control for the conformance kit. nil = the Engine, when it implements
	// Conformance; otherwise the service is not served.
	Conformance Conformance
}

// Serve runs the plugin server, speaking go-plugin's protocol itself
// (docs/writing-plugins.md, "The handshake"): it checks the magic cookie,
// listens on a unix socket (in PLUGIN_UNIX_SOCKET_DIR when set), answers
// the host's mutual TLS with a fresh P-256 certificate (docs/decisions.md,
// "Plugin transport"), prints the handshake line on stdout (which must
// carry nothing else before it), then serves gRPC with MaxMessageBytes
// limits: the configured services, grpc.health.v1, and go-plugin's
// controller and stdio services, through which os.Stdout and os.Stderr
// reach the host from then on. It recovers handler panics as unknown
// failures, answers a WorkspaceModeRead request without tools with an
// invalid_config failure, and returns nil when the host shuts the plugin
// down. It returns ErrServeConfig at once when there is nothing to serve,
// and an error wrapping the cause when the socket, the certificate or the
// stdio pipes cannot be made. Run by hand (without the host's magic
// cookie) it prints an explanation and exits the process with status 1.
func Serve(cfg ServeConfig) error {
	if cfg.Engine == nil && cfg.Node == nil && cfg.Policy == nil {
		return fmt.Errorf("plugin: Serve needs an Engine, a NodeBinding or a Policy: %w", ErrServeConfig)
	}
	if os.Getenv(Handshake.MagicCookieKey) != Handshake.MagicCookieValue {
		_, _ = fmt.Fprint(stderr, notAPlugin)
		os.Exit(1)
	}
	logger := cfg.Logger
	if logger == nil {
		logger = hclog.New(&hclog.LoggerOptions{Output: stderr, JSONFormat: true, Level: hclog.Trace})
	}
	ep, err := listen(os.Getenv(EnvClientCert), os.Getenv(envUnixSocketDir))
	if err != nil {
		logger.Error("plugin cannot serve", "error", err)
		return err
	}
	defer ep.lis.Close()
	s := newGRPCServer(cfg, ep, logger)
	return serveProtocol(s, ep, logger)
}

// newGRPCServer is the plugin's gRPC server with cfg's services
// registered, over ep's TLS when it has one.
func newGRPCServer(cfg ServeConfig, ep endpoint, logger hclog.Logger) *grpc.Server {
	opts := []grpc.ServerOption{
		grpc.MaxRecvMsgSize(MaxMessageBytes),
		grpc.MaxSendMsgSize(MaxMessageBytes),
		grpc.ChainUnaryInterceptor(recoverUnary(logger)),
		grpc.ChainStreamInterceptor(recoverStream(logger)),
		grpc.InitialWindowSize(WindowBytes),
		grpc.InitialConnWindowSize(WindowBytes),
		// A pool of goroutines whose stacks have grown serves the
		// calls: a fresh goroutine per call grows its stack through
		// protobuf's encoder on every call.
		grpc.NumStreamWorkers(uint32(runtime.GOMAXPROCS(0))),
	}
	if ep.tls != nil {
		// The TLS over raw socket I/O (rawio_linux.go).
		opts = append(opts, grpc.Creds(tlsRawIO(ep.tls)))
	}
	s := grpc.NewServer(opts...)
	engine, conformance, settled := serveEngineConfig(cfg)
	if engine != nil {
		registerEngine(s, engine, logger)
	}
	if conformance != nil {
		registerConformance(s, conformance, settled)
	}
	if cfg.Node != nil {
		registerNode(s, cfg.Node)
	}
	if cfg.Policy != nil {
		registerPolicy(s, cfg.Policy)
	}
	registerHealth(s, cfg.Health)
	return s
}

// recoverUnary turns a panic in a unary handler into an unknown Failure, so
// that one bad request never takes the plugin down.
func recoverUnary(logger hclog.Logger) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (resp any, err error) {
		defer func() {
			if v := recover(); v != nil {
				resp, err = nil, panicFailure(logger, info.FullMethod, v)
			}
		}()
		return handler(ctx, req)
	}
}

// recoverStream is recoverUnary for streaming handlers (Run).
func recoverStream(logger hclog.Logger) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) (err error) {
		defer func() {
			if v := recover(); v != nil {
				err = panicFailure(logger, info.FullMethod, v)
			}
		}()
		return handler(srv, ss)
	}
}

func panicFailure(logger hclog.Logger, method string, v any) error {
	logger.Error("plugin handler panicked", "method", method, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
	return failureStatus(&Failure{Kind: FailureUnknown, Message: fmt.Sprintf("plugin panicked in %s: %v", method, v)})
}
