package plugin

import (
	"context"
	"encoding/json"

	pb "github.com/obversa/obversa/plugin/internal/pluginv1"
)

// policyClient implements Policy over the gRPC Policy service of a plugin
// process (host side).
type policyClient struct {
	remote
	client pb.PolicyClient
}

var _ Policy = (*policyClient)(nil)

// Describe implements Policy.
func (c *policyClient) Describe(ctx context.Context) (*Description, error) {
	return c.describe(ctx, c.client)
}

// Configure implements Policy.
func (c *policyClient) Configure(ctx context.Context, config json.RawMessage) ([]Diagnostic, error) {
	return c.configure(ctx, c.client, config)
}

// Decide implements Policy. An answer without a known verdict is a
// protocol violation (ErrProtocol), never an allow.
func (c *policyClient) Decide(ctx context.Context, req DecideRequest) (*Decision, error) {
	m, err := decideRequestToProto(req)
	if err != nil {
		return nil, err
	}
	cctx, cancel := c.join(ctx)
	defer cancel()
	resp, err := c.client.Decide(cctx, m)
	if err != nil {
		return nil, c.callError(ctx, "Decide", err)
	}
	d, err := decisionFromProto(resp)
	if err != nil {
		return nil, c.protocolError("Decide", err)
	}
	return d, nil
}
