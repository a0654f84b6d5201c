package plugin

import (
	"context"
	"errors"

	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	pb "github.com/obversa/obversa/plugin/internal/pluginv1"
)

// errHostSide is what the plugin-side half of the host's go-plugin glue
// returns: a plugin registers its services in Serve (serve_services.go),
// never through go-plugin.
var errHostSide = errors.New("plugin: the go-plugin glue is the host's; plugins serve through plugin.Serve")

// enginePlugin is the host's go-plugin glue for TypeEngine: it builds the
// client shim.
type enginePlugin struct {
	goplugin.NetRPCUnsupportedPlugin
}

// GRPCServer is never used: see errHostSide.
func (p *enginePlugin) GRPCServer(*goplugin.GRPCBroker, *grpc.Server) error { return errHostSide }

// GRPCClient returns an *engineClient; done is cancelled by go-plugin when
// the plugin process exits.
func (p *enginePlugin) GRPCClient(done context.Context, _ *goplugin.GRPCBroker, cc *grpc.ClientConn) (any, error) {
	return &engineClient{remote: remote{done: done}, client: pb.NewEngineClient(cc)}, nil
}

// nodePlugin is the host's go-plugin glue for TypeNode.
type nodePlugin struct {
	goplugin.NetRPCUnsupportedPlugin
}

// GRPCServer is never used: see errHostSide.
func (p *nodePlugin) GRPCServer(*goplugin.GRPCBroker, *grpc.Server) error { return errHostSide }

// GRPCClient returns a *nodeClient; done is cancelled by go-plugin when the
// plugin process exits.
func (p *nodePlugin) GRPCClient(done context.Context, _ *goplugin.GRPCBroker, cc *grpc.ClientConn) (any, error) {
	return &nodeClient{remote: remote{done: done}, client: pb.NewNodeBindingClient(cc)}, nil
}

// policyPlugin is the host's go-plugin glue for TypePolicy.
type policyPlugin struct {
	goplugin.NetRPCUnsupportedPlugin
}

// GRPCServer is never used: see errHostSide.
func (p *policyPlugin) GRPCServer(*goplugin.GRPCBroker, *grpc.Server) error { return errHostSide }

// GRPCClient returns a *policyClient; done is cancelled by go-plugin when
// the plugin process exits.
func (p *policyPlugin) GRPCClient(done context.Context, _ *goplugin.GRPCBroker, cc *grpc.ClientConn) (any, error) {
	return &policyClient{remote: remote{done: done}, client: pb.NewPolicyClient(cc)}, nil
}
