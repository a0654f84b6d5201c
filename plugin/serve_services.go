package plugin

import (
	"context"
	"io"
	"os"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/types/known/emptypb"

	pb "github.com/obversa/obversa/plugin/internal/pluginv1"
)

// healthService is the service name whose grpc.health.v1 status says
// whether the plugin serves, as go-plugin's host asks it.
const healthService = "plugin"

// stdioChunkBytes is the most a stdio message carries.
const stdioChunkBytes = 32 << 10

// Channels of go-plugin's StdioData message.
const (
	stdioStdout = 1
	stdioStderr = 2
)

func registerEngine(s *grpc.Server, impl Engine, logger hclog.Logger) {
	pb.RegisterEngineServer(s, &engineServer{impl: impl, logger: logger})
}

func registerNode(s *grpc.Server, impl NodeBinding) {
	pb.RegisterNodeBindingServer(s, &nodeServer{impl: impl})
}

func registerPolicy(s *grpc.Server, impl Policy) {
	pb.RegisterPolicyServer(s, &policyServer{impl: impl})
}

func registerConformance(s *grpc.Server, impl Conformance, rec *settleRecorder) {
	pb.RegisterConformanceServer(s, &conformanceServer{impl: impl, rec: rec})
}

// healthServer answers grpc.health.v1 Check: the service "plugin" with
// fn's verdict (SERVING when fn is nil), the whole server ("") SERVING,
// any other service NotFound.
type healthServer struct {
	healthpb.UnimplementedHealthServer
	fn func(context.Context) bool
}

func registerHealth(s *grpc.Server, fn func(context.Context) bool) {
	healthpb.RegisterHealthServer(s, &healthServer{fn: fn})
}

// Check implements healthpb.HealthServer.
func (h *healthServer) Check(ctx context.Context, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	switch req.GetService() {
	case "":
		return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
	case healthService:
	default:
		return nil, status.Error(codes.NotFound, "unknown service")
	}
	st := healthpb.HealthCheckResponse_SERVING
	if h.fn != nil && !h.fn(ctx) {
		st = healthpb.HealthCheckResponse_NOT_SERVING
	}
	if err := ctx.Err(); err != nil {
		return nil, status.FromContextError(err).Err()
	}
	return &healthpb.HealthCheckResponse{Status: st}, nil
}

// controllerService is go-plugin's plugin.GRPCController: the host's
// Client.Close calls Shutdown, which stops the server and so ends Serve.
// Its messages are google.protobuf.Empty on the wire.
var controllerService = grpc.ServiceDesc{
	ServiceName: "plugin.GRPCController",
	HandlerType: (*any)(nil),
	Methods: []grpc.MethodDesc{{
		MethodName: "Shutdown",
		Handler: func(srv any, ctx context.Context, dec func(any) error, ic grpc.UnaryServerInterceptor) (any, error) {
			if err := dec(new(emptypb.Empty)); err != nil {
				return nil, err
			}
			shutdown := func(context.Context, any) (any, error) {
				// Stop ends this call's connection too: the host does
				// not wait for the answer.
				go srv.(*grpc.Server).Stop()
				return &emptypb.Empty{}, nil
			}
			if ic == nil {
				return shutdown(ctx, nil)
			}
			return ic(ctx, nil, &grpc.UnaryServerInfo{Server: srv, FullMethod: "/plugin.GRPCController/Shutdown"}, shutdown)
		},
	}},
}

func registerController(s *grpc.Server) { s.RegisterService(&controllerService, s) }

// stdioService is go-plugin's plugin.GRPCStdio: what the plugin writes to
// os.Stdout and os.Stderr after the handshake travels to the host as
// StdioData messages (channel = 1, data = 2) on the one StreamStdio call.
type stdioService struct {
	outR, outW *os.File
	errR, errW *os.File
	chunks     chan []byte
}

// newStdioService makes the pipes that will stand in for os.Stdout and
// os.Stderr; an error is os.Pipe's.
func newStdioService() (*stdioService, error) {
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		_, _ = outR.Close(), outW.Close()
		return nil, err
	}
	return &stdioService{outR: outR, outW: outW, errR: errR, errW: errW, chunks: make(chan []byte)}, nil
}

// redirect points os.Stdout and os.Stderr at the service's pipes and
// starts reading them.
func (s *stdioService) redirect() {
	os.Stdout, os.Stderr = s.outW, s.errW
	go s.read(s.outR, stdioStdout)
	go s.read(s.errR, stdioStderr)
}

// read passes what r holds, as StdioData of channel ch, to the stream.
func (s *stdioService) read(r io.Reader, ch uint64) {
	buf := make([]byte, stdioChunkBytes)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			b := protowire.AppendTag(nil, 1, protowire.VarintType)
			b = protowire.AppendVarint(b, ch)
			b = protowire.AppendTag(b, 2, protowire.BytesType)
			s.chunks <- protowire.AppendBytes(b, buf[:n])
		}
		if err != nil {
			return
		}
	}
}

// stream sends stdio messages on ss until its call ends.
func (s *stdioService) stream(ss grpc.ServerStream) error {
	if err := ss.RecvMsg(new(emptypb.Empty)); err != nil {
		return err
	}
	ctx := ss.Context()
	for {
		select {
		case <-ctx.Done():
			return nil
		case b := <-s.chunks:
			if err := ss.SendMsg(rawMessage(b)); err != nil {
				return err
			}
		}
	}
}

var stdioServiceDesc = grpc.ServiceDesc{
	ServiceName: "plugin.GRPCStdio",
	HandlerType: (*any)(nil),
	Streams: []grpc.StreamDesc{{
		StreamName:    "StreamStdio",
		ServerStreams: true,
		Handler: func(srv any, ss grpc.ServerStream) error {
			return srv.(*stdioService).stream(ss)
		},
	}},
}

func registerStdio(s *grpc.Server, stdio *stdioService) { s.RegisterService(&stdioServiceDesc, stdio) }
