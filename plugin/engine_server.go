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
// still sent, so that the host reports the protocol violation. Messages
// are written in their wire form (wire_attempts_encode.go).
func (s *engineServer) Run(req *pb.RunRequest, stream pb.Engine_RunServer) error {
	r, err := runRequestFromProto(req)
	if err != nil {
		return status.Error(codes.InvalidArgument, err.Error())
	}
	out := &runSender{stream: stream}
	defer out.close()

	res, err := s.impl.Run(stream.Context(), r, out.emit)
	return out.send(s.appendTerminal(make([]byte, 0, terminalSize(res)), res, err))
}

// appendTerminal appends the terminal RunMessage of a Run that returned
// res and err.
func (s *engineServer) appendTerminal(b []byte, res *RunResult, err error) []byte {
	switch {
	case err != nil:
		return appendFailureMessage(b, errorToFailure(err))
	case res == nil:
		return appendFailureMessage(b, errorToFailure(fmt.Errorf("Run: %w", errNilAnswer)))
	default:
		if verr := res.Validate(); verr != nil {
			s.logger.Error("engine returned an invalid result; the host will reject it", "error", verr)
		}
		return appendResultMessage(b, res)
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
	m, err := appendEventMessage(make([]byte, 0, eventSize(ev)), ev)
	if err != nil {
		return err
	}
	return s.send(m)
}

// send sends msg, the wire form of a RunMessage, unless Run has returned
// or the host has gone away.
func (s *runSender) send(msg []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errStreamClosed
	}
	if err := s.stream.Context().Err(); err != nil {
		return fmt.Errorf("run stream: %w", err)
	}
	return s.stream.SendMsg(rawMessage(msg))
}

func (s *runSender) close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
}
