package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	pb "github.com/obversa/obversa/plugin/internal/pluginv1"
)

// engineClient implements Engine over the gRPC Engine service of a plugin
// process (host side).
type engineClient struct {
	remote
	client pb.EngineClient
}

var _ Engine = (*engineClient)(nil)

// Describe implements Engine.
func (c *engineClient) Describe(ctx context.Context) (*Description, error) {
	return c.describe(ctx, c.client)
}

// Configure implements Engine.
func (c *engineClient) Configure(ctx context.Context, config json.RawMessage) ([]Diagnostic, error) {
	return c.configure(ctx, c.client, config)
}

// Admit implements Engine.
func (c *engineClient) Admit(ctx context.Context, req AdmitRequest) (*AdmitResponse, error) {
	cctx, cancel := c.join(ctx)
	defer cancel()
	resp, err := c.client.Admit(cctx, &pb.AdmitRequest{Target: identityToProto(req.Target)})
	if err != nil {
		return nil, c.callError(ctx, "Admit", err)
	}
	out, err := admitResponseFromProto(resp)
	if err != nil {
		return nil, c.protocolError("Admit", err)
	}
	return out, nil
}

// Run implements Engine. Events are passed to emit in stream order; the
// first terminal message ends the call (anything after it is not read).
// An error from emit cancels the stream and is returned wrapped. Cancelling
// ctx cancels the stream at once and returns an error wrapping ctx.Err().
func (c *engineClient) Run(ctx context.Context, req RunRequest, emit Emitter) (*RunResult, error) {
	m, err := runRequestToProto(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("plugin %q: Run: %w: %w", c.name, err, ErrInvalidRequest)
	}
	cctx, cancel := c.join(ctx)
	defer cancel()
	stream, err := c.client.Run(cctx, m)
	if err != nil {
		return nil, c.callError(ctx, "Run", err)
	}
	for {
		msg, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil, c.protocolError("Run", errors.New("stream ended without a result or failure"))
		}
		if err != nil {
			return nil, c.callError(ctx, "Run", err)
		}
		d, err := decodeRunMessage(msg)
		switch {
		case err != nil:
			return nil, c.protocolError("Run", err)
		case d.failure != nil:
			return nil, d.failure
		case d.result != nil:
			return d.result, nil
		case d.event != nil && emit != nil:
			if err := emit(*d.event); err != nil {
				return nil, fmt.Errorf("plugin %q: Run: emitting %s event: %w", c.name, d.event.Kind, err)
			}
		}
	}
}
