package plugin

import (
	"context"

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
	return serveDescribe(ctx, s.impl)
}

// Configure implements pb.NodeBindingServer.
func (s *nodeServer) Configure(ctx context.Context, req *pb.ConfigureRequest) (*pb.ConfigureResponse, error) {
	return serveConfigure(ctx, s.impl, req)
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
