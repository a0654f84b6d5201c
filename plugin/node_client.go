package plugin

import (
	"context"
	"encoding/json"
	"errors"

	pb "github.com/obversa/obversa/plugin/internal/pluginv1"
)

// nodeClient implements NodeBinding over the gRPC NodeBinding service of a
// plugin process (host side).
type nodeClient struct {
	remote
	client pb.NodeBindingClient
}

var _ NodeBinding = (*nodeClient)(nil)

// Describe implements NodeBinding.
func (c *nodeClient) Describe(ctx context.Context) (*Description, error) {
	return c.describe(ctx, c.client)
}

// Configure implements NodeBinding.
func (c *nodeClient) Configure(ctx context.Context, config json.RawMessage) ([]Diagnostic, error) {
	return c.configure(ctx, c.client, config)
}

// Invoke implements NodeBinding. The output must be valid JSON; anything
// else is a protocol violation.
func (c *nodeClient) Invoke(ctx context.Context, req InvokeRequest) (json.RawMessage, error) {
	cctx, cancel := c.join(ctx)
	defer cancel()
	resp, err := c.client.Invoke(cctx, invokeRequestToProto(ctx, req))
	if err != nil {
		return nil, c.callError(ctx, "Invoke", err)
	}
	out := resp.GetOutputJson()
	if !json.Valid(out) {
		return nil, c.protocolError("Invoke", errors.New("output is not valid JSON"))
	}
	return json.RawMessage(out), nil
}
