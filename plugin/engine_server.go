package plugin

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/obversa/obversa/plugin/internal/pluginv1"
)

// engineServer serves an Engine implementation as the gRPC Engine service
// (plugin side). Errors from the implementation travel as Failure details;
// panics are turned into unknown failures by the server's interceptors.
type engineServer struct {
	pb.UnimplementedEngineServer
	impl   Engine
	logger hclog.Logger
}

// Describe implements pb.EngineServer.
func (s *engineServer) Describe(ctx context.Context, _ *pb.DescribeRequest) (*pb.DescribeResponse, error) {
	return serveDescribe(ctx, s.impl)
}

// Configure implements pb.EngineServer.
func (s *engineServer) Configure(ctx context.Context, req *pb.ConfigureRequest) (*pb.ConfigureResponse, error) {
	return serveConfigure(ctx, s.impl, req)
}

// Admit implements pb.EngineServer.
func (s *engineServer) Admit(ctx context.Context, req *pb.AdmitRequest) (*pb.AdmitResponse, error) {
	resp, err := s.impl.Admit(ctx, AdmitRequest{Target: identityFromProto(req.GetTarget())})
	if err != nil {
		return nil, failureStatus(errorToFailure(err))
	}
	if resp == nil {
		return nil, failureStatus(errorToFailure(fmt.Errorf("Admit: %w", errNilAnswer)))
	}
	return admitResponseToProto(resp), nil
}

// Run implements pb.EngineServer: it streams the implementation's events
// and then exactly one terminal message. An invalid result is logged and
// still sent, so that the host reports the protocol violation.
func (s *engineServer) Run(req *pb.RunRequest, stream pb.Engine_RunServer) error {
	r, err := runRequestFromProto(req)
	if err != nil {
		return status.Error(codes.InvalidArgument, err.Error())
	}
	out := &runSender{stream: stream}
	defer out.close()

	res, err := s.impl.Run(stream.Context(), r, out.emit)
	terminal := s.terminal(res, err)
	return out.send(terminal)
}

// terminal is the terminal message of a Run that returned res and err.
func (s *engineServer) terminal(res *RunResult, err error) *pb.RunMessage {
	switch {
	case err != nil:
		return &pb.RunMessage{Message: &pb.RunMessage_Failure{Failure: failureToProto(errorToFailure(err))}}
	case res == nil:
		f := errorToFailure(fmt.Errorf("Run: %w", errNilAnswer))
		return &pb.RunMessage{Message: &pb.RunMessage_Failure{Failure: failureToProto(f)}}
	default:
		if verr := res.Validate(); verr != nil {
			s.logger.Error("engine returned an invalid result; the host will reject it", "error", verr)
		}
		return &pb.RunMessage{Message: &pb.RunMessage_Result{Result: resultToProto(res)}}
	}
}

// runSender serialises Sends on a Run stream: an engine may emit from
// several goroutines, and must not send after Run returned.
type runSender struct {
	mu     sync.Mutex
	stream pb.Engine_RunServer
	closed bool
}

// errStreamClosed is returned by an Emitter called after Run returned.
var errStreamClosed = errors.New("run stream is closed")

func (s *runSender) emit(ev RunEvent) error {
	m, err := eventToProto(ev)
	if err != nil {
		return err
	}
	return s.send(m)
}

// send sends m unless Run has returned or the host has gone away.
func (s *runSender) send(m *pb.RunMessage) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errStreamClosed
	}
	if err := s.stream.Context().Err(); err != nil {
		return fmt.Errorf("run stream: %w", err)
	}
	return s.stream.Send(m)
}

func (s *runSender) close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
}
