package plugin

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"

	pb "github.com/obversa/obversa/plugin/internal/pluginv1"
)

// scriptedEngine is a raw gRPC Engine server that sends exactly what a test
// scripts, including protocol violations the Go server shim never makes.
type scriptedEngine struct {
	pb.UnimplementedEngineServer
	msgs  []*pb.RunMessage
	err   error
	block bool // block until the stream's context ends
	admit *pb.AdmitResponse
}

func (s *scriptedEngine) Run(_ *pb.RunRequest, stream pb.Engine_RunServer) error {
	for _, m := range s.msgs {
		if err := stream.Send(m); err != nil {
			return err
		}
	}
	if s.block {
		<-stream.Context().Done()
	}
	return s.err
}

func (s *scriptedEngine) Admit(context.Context, *pb.AdmitRequest) (*pb.AdmitResponse, error) {
	return s.admit, s.err
}

// inProcess serves srv over an in-memory connection and returns a client
// shim whose plugin "exits" when exit is called.
func inProcess(t *testing.T, srv pb.EngineServer) (c *engineClient, exit func()) {
	t.Helper()
	conn := bufconnServe(t, srv)
	done, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return &engineClient{remote: remote{name: "scripted", done: done}, client: pb.NewEngineClient(conn)}, cancel
}

// bufconnServe serves srv over an in-memory connection, with the server
// options given, and returns the client connection; both end with t.
func bufconnServe(t *testing.T, srv pb.EngineServer, opts ...grpc.ServerOption) *grpc.ClientConn {
	t.Helper()
	lis := bufconn.Listen(1 << 20)
	s := grpc.NewServer(opts...)
	pb.RegisterEngineServer(s, srv)
	go func() { _ = s.Serve(lis) }()
	t.Cleanup(s.Stop)
	conn, err := grpc.NewClient("passthrough:///bufnet",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

func text(s string) *pb.RunMessage {
	return &pb.RunMessage{Message: &pb.RunMessage_Text{Text: &pb.Delta{Text: s}}}
}

func resultMsg(s string) *pb.RunMessage {
	return &pb.RunMessage{Message: &pb.RunMessage_Result{Result: resultToProto(&RunResult{Parts: []Part{{Kind: PartText, Text: s, Final: true}}})}}
}

func TestRunClientProtocol(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		srv      *scriptedEngine
		want     error  // sentinel the error must wrap; nil = success
		wantText string // final text on success, or error substring
		events   int
	}{
		{"events then result", &scriptedEngine{msgs: []*pb.RunMessage{text("a"), {}, text("b"), resultMsg("ok")}}, nil, "ok", 2},
		{"first terminal wins", &scriptedEngine{msgs: []*pb.RunMessage{resultMsg("first"), resultMsg("second"), text("late")}}, nil, "first", 0},
		{"no terminal", &scriptedEngine{msgs: []*pb.RunMessage{text("a")}}, ErrProtocol, "ended without a result or failure", 1},
		{"invalid result", &scriptedEngine{msgs: []*pb.RunMessage{{Message: &pb.RunMessage_Result{Result: &pb.RunResult{}}}}}, ErrProtocol, "0 final parts", 0},
		{"untyped status", &scriptedEngine{err: status.Error(codes.InvalidArgument, "nope")}, ErrProtocol, "without a typed failure", 0},
		{"untyped plain error", &scriptedEngine{err: errors.New("plain")}, ErrProtocol, "plain", 0},
		{"unavailable", &scriptedEngine{err: status.Error(codes.Unavailable, "gone")}, ErrPluginTransport, "gone", 0},
		{"oversize", &scriptedEngine{err: status.Error(codes.ResourceExhausted, "too big")}, ErrMessageTooLarge, "64 MiB", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, _ := inProcess(t, tt.srv)
			events := 0
			res, err := c.Run(context.Background(), RunRequest{}, func(RunEvent) error { events++; return nil })
			if events != tt.events {
				t.Errorf("emitted %d events, want %d", events, tt.events)
			}
			if tt.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				if f, _ := res.Final(); f.Text != tt.wantText {
					t.Errorf("final = %q, want %q", f.Text, tt.wantText)
				}
				return
			}
			if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.wantText) {
				t.Errorf("error = %v, want %v containing %q", err, tt.want, tt.wantText)
			}
			if errors.Is(err, ErrPluginExited) {
				t.Errorf("error %v claims the plugin exited", err)
			}
		})
	}
}

func TestRunClientPluginExitIsNotCancellation(t *testing.T) {
	t.Parallel()
	c, exit := inProcess(t, &scriptedEngine{msgs: []*pb.RunMessage{text("a")}, block: true})
	start := time.Now()
	_, err := c.Run(context.Background(), RunRequest{}, func(RunEvent) error {
		exit() // the plugin process "dies" mid-stream
		return nil
	})
	if !errors.Is(err, ErrPluginExited) || errors.Is(err, context.Canceled) {
		t.Fatalf("error = %v, want ErrPluginExited and not context.Canceled", err)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("Run took %s to notice the exit", took)
	}
}

func TestAdmitClientProtocol(t *testing.T) {
	t.Parallel()
	c, _ := inProcess(t, &scriptedEngine{admit: &pb.AdmitResponse{}})
	if _, err := c.Admit(context.Background(), AdmitRequest{}); !errors.Is(err, ErrProtocol) {
		t.Errorf("admit without outcome: %v, want ErrProtocol", err)
	}
	c, _ = inProcess(t, &scriptedEngine{})
	if _, err := c.Describe(context.Background()); !errors.Is(err, ErrWrongType) {
		t.Errorf("unimplemented Describe: %v, want ErrWrongType", err)
	}
	if _, err := c.Run(context.Background(), RunRequest{Purpose: "probe"}, nil); !errors.Is(err, ErrInvalidRequest) {
		t.Errorf("unknown purpose: %v, want ErrInvalidRequest", err)
	}
}
