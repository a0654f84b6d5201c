package plugin

import (
	"context"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/obversa/obversa/plugin/internal/pluginv1"
)

// policyServer serves a Policy implementation as the gRPC Policy service
// (plugin side).
type policyServer struct {
	pb.UnimplementedPolicyServer
	impl Policy
}

// Describe implements pb.PolicyServer.
func (s *policyServer) Describe(ctx context.Context, _ *pb.DescribeRequest) (*pb.DescribeResponse, error) {
	return serveDescribe(ctx, s.impl)
}

// Configure implements pb.PolicyServer.
func (s *policyServer) Configure(ctx context.Context, req *pb.ConfigureRequest) (*pb.ConfigureResponse, error) {
	return serveConfigure(ctx, s.impl, req)
}

// Decide implements pb.PolicyServer. An error travels as a Failure detail;
// a nil Decision as an unknown failure.
func (s *policyServer) Decide(ctx context.Context, req *pb.DecideRequest) (*pb.DecideResponse, error) {
	r, err := decideRequestFromProto(req)
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	d, err := s.impl.Decide(ctx, r)
	if err != nil {
		return nil, failureStatus(errorToFailure(err))
	}
	if d == nil {
		return nil, failureStatus(errorToFailure(fmt.Errorf("Decide: %w", errNilAnswer)))
	}
	return decisionToProto(d), nil
}
