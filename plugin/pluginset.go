package plugin

import (
	"context"
	"errors"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	pb "github.com/obversa/obversa/plugin/internal/pluginv1"
)

// enginePlugin is the go-plugin glue for TypeEngine: on the plugin side it
// registers the Engine service for impl, on the host side it builds the
// client shim.
type enginePlugin struct {
	goplugin.NetRPCUnsupportedPlugin
	impl   Engine
	logger hclog.Logger
}

// GRPCServer registers the Engine service.
func (p *enginePlugin) GRPCServer(_ *goplugin.GRPCBroker, s *grpc.Server) error {
	if p.impl == nil {
		return errors.New("no Engine implementation to serve")
	}
	pb.RegisterEngineServer(s, &engineServer{impl: p.impl, logger: p.logger})
	return nil
}

// GRPCClient returns an *engineClient; done is cancelled by go-plugin when
// the plugin process exits.
func (p *enginePlugin) GRPCClient(done context.Context, _ *goplugin.GRPCBroker, cc *grpc.ClientConn) (any, error) {
	return &engineClient{remote: remote{done: done}, client: pb.NewEngineClient(cc)}, nil
}

// nodePlugin is the go-plugin glue for TypeNode.
type nodePlugin struct {
	goplugin.NetRPCUnsupportedPlugin
	impl NodeBinding
}

// GRPCServer registers the NodeBinding service.
func (p *nodePlugin) GRPCServer(_ *goplugin.GRPCBroker, s *grpc.Server) error {
	if p.impl == nil {
		return errors.New("no NodeBinding implementation to serve")
	}
	pb.RegisterNodeBindingServer(s, &nodeServer{impl: p.impl})
	return nil
}

// GRPCClient returns a *nodeClient; done is cancelled by go-plugin when the
// plugin process exits.
func (p *nodePlugin) GRPCClient(done context.Context, _ *goplugin.GRPCBroker, cc *grpc.ClientConn) (any, error) {
	return &nodeClient{remote: remote{done: done}, client: pb.NewNodeBindingClient(cc)}, nil
}

// policyPlugin is the go-plugin glue for TypePolicy.
type policyPlugin struct {
	goplugin.NetRPCUnsupportedPlugin
	impl Policy
}

// GRPCServer registers the Policy service.
func (p *policyPlugin) GRPCServer(_ *goplugin.GRPCBroker, s *grpc.Server) error {
	if p.impl == nil {
		return errors.New("no Policy implementation to serve")
	}
	pb.RegisterPolicyServer(s, &policyServer{impl: p.impl})
	return nil
}

// GRPCClient returns a *policyClient; done is cancelled by go-plugin when
// the plugin process exits.
func (p *policyPlugin) GRPCClient(done context.Context, _ *goplugin.GRPCBroker, cc *grpc.ClientConn) (any, error) {
	return &policyClient{remote: remote{done: done}, client: pb.NewPolicyClient(cc)}, nil
}
