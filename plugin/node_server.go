package plugin

import (
	"context"
	"fmt"

	pb "github.com/obversa/obversa/plugin/internal/pluginv1"
)

// nodeServer serves a NodeBinding implementation as the gRPC NodeBinding
// service (plugin side).
type nodeServer struct {
	pb.UnimplementedNodeBindingServer
	impl NodeBinding
}

// Describe implements pb.NodeBindingServer.
func (s *nodeServer) Describe(ctx context.Context, _ *pb.DescribeRequest) (*pb.DescribeResponse, error) {
	d, err := s.impl.Describe(ctx)
	if err != nil {
		return nil, failureStatus(errorToFailure(err))
	}
	if d == nil {
		return nil, failureStatus(errorToFailure(fmt.Errorf("Describe: %w", errNilAnswer)))
	}
	return descriptionToProto(d), nil
}

// Configure implements pb.NodeBindingServer.
func (s *nodeServer) Configure(ctx context.Context, req *pb.ConfigureRequest) (*pb.ConfigureResponse, error) {
	ds, err := s.impl.Configure(ctx, rawJSON(req.GetConfigJson()))
	if err != nil {
		return nil, failureStatus(errorToFailure(err))
	}
	return diagnosticsToProto(ds), nil
}

// Invoke implements pb.NodeBindingServer. A nil output is sent as JSON
// null.
func (s *nodeServer) Invoke(ctx context.Context, req *pb.InvokeRequest) (*pb.InvokeResponse, error) {
	out, err := s.impl.Invoke(ctx, invokeRequestFromProto(req))
	if err != nil {
		return nil, failureStatus(errorToFailure(err))
	}
	if out == nil {
		out = []byte("null")
	}
	return &pb.InvokeResponse{OutputJson: out}, nil
}
