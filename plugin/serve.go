package plugin

import (
	"context"
	"crypto/tls"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
)

// stderr is the process's standard error as it was before go-plugin's Serve
// redirected os.Stderr into the gRPC stdio stream; plugin logs must reach the
// real stderr, where the host parses them.
var stderr = os.Stderr

// ServeConfig says what a plugin binary serves. At least one of Engine,
// Node and Policy is set.
type ServeConfig struct {
	// Engine is served under the plugin-set key "engine"; nil = not served.
	Engine Engine
	// Node is served under the plugin-set key "node"; nil = not served.
	Node NodeBinding
	// Policy is served under the plugin-set key "policy"; nil = not served.
	Policy Policy
	// Logger receives the plugin's own and go-plugin's log lines. It should
	// write hclog JSON to standard error, which the host re-logs; nil = such
	// a logger at trace level (the host filters by its own level).
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

// Serve runs the plugin server: it performs the go-plugin handshake on
// stdout (which must carry nothing else before it), answers the host's
// mutual TLS with a fresh P-256 certificate (docs/decisions.md, "Plugin
// transport"), serves gRPC with MaxMessageBytes limits, recovers handler panics as unknown failures,
// answers a WorkspaceModeRead request without tools with an invalid_config
// failure, serves the Conformance service when there is one, and returns
// when the host closes the plugin. It returns ErrServeConfig at once when
// there is nothing to serve. Run by hand (without the host's magic cookie)
// it prints an explanation and exits the process with status 1.
func Serve(cfg ServeConfig) error {
	if cfg.Engine == nil && cfg.Node == nil && cfg.Policy == nil {
		return fmt.Errorf("plugin: Serve needs an Engine, a NodeBinding or a Policy: %w", ErrServeConfig)
	}
	logger := cfg.Logger
	if logger == nil {
		logger = hclog.New(&hclog.LoggerOptions{Output: stderr, JSONFormat: true, Level: hclog.Trace})
	}
	set := goplugin.PluginSet{}
	engine, conformance, settled := serveEngineConfig(cfg)
	if engine != nil {
		set[string(TypeEngine)] = &enginePlugin{impl: engine, logger: logger}
	}
	if conformance != nil {
		set[conformanceSetKey] = &conformancePlugin{impl: conformance, rec: settled}
	}
	if cfg.Node != nil {
		set[string(TypeNode)] = &nodePlugin{impl: cfg.Node}
	}
	if cfg.Policy != nil {
		set[string(TypePolicy)] = &policyPlugin{impl: cfg.Policy}
	}
	var creds []grpc.ServerOption // the TLS of the P-256 answer, below
	sc := &goplugin.ServeConfig{
		HandshakeConfig:  Handshake,
		VersionedPlugins: map[int]goplugin.PluginSet{ProtocolVersion: set},
		GRPCServer: func(opts []grpc.ServerOption) *grpc.Server {
			opts = append(opts,
				grpc.MaxRecvMsgSize(MaxMessageBytes),
				grpc.MaxSendMsgSize(MaxMessageBytes),
				grpc.ChainUnaryInterceptor(recoverUnary(logger), healthUnary(cfg.Health)),
				grpc.ChainStreamInterceptor(recoverStream(logger)),
				grpc.InitialWindowSize(WindowBytes),
				grpc.InitialConnWindowSize(WindowBytes),
				// A pool of goroutines whose stacks have grown serves the
				// calls: a fresh goroutine per call grows its stack through
				// protobuf's encoder on every call.
				grpc.NumStreamWorkers(uint32(runtime.GOMAXPROCS(0))),
			)
			// Last, so that they replace go-plugin's own of the same
			// configuration.
			return grpc.NewServer(append(opts, creds...)...)
		},
		Logger: logger,
	}
	// The host asks for mutual TLS: answer it on P-256 rather than on
	// go-plugin's P-521 key (docs/decisions.md, "Plugin transport").
	if clientPEM := os.Getenv(EnvClientCert); clientPEM != "" {
		if tlsCfg, certDER, ok := serverTLS(clientPEM); ok && certInHandshake(certDER) {
			sc.TLSProvider = func() (*tls.Config, error) { return tlsCfg, nil }
			// The same TLS, over raw socket I/O (rawio_linux.go).
			creds = []grpc.ServerOption{grpc.Creds(tlsRawIO(tlsCfg))}
		}
	}
	goplugin.Serve(sc)
	return nil
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
