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
	client   pb.EngineClient
	attempts attemptsState
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
// An error from emit cancels the call and is returned wrapped. Cancelling
// ctx cancels the call at once and returns an error wrapping ctx.Err().
//
// The call travels on the plugin's Attempts stream, one stream shared by
// every call of this client, when the plugin serves it; otherwise as a Run
// RPC of its own (docs/writing-plugins.md, "The attempt stream"). A call
// is made through Run only when the plugin cannot have seen it on the
// stream.
func (c *engineClient) Run(ctx context.Context, req RunRequest, emit Emitter) (*RunResult, error) {
	m, err := runRequestToProto(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("plugin %q: Run: %w: %w", c.name, err, ErrInvalidRequest)
	}
	// A stream found ended before the request was sent is replaced once.
	for range 2 {
		s, err := c.stream(ctx)
		if err != nil {
			return nil, err
		}
		if s == nil {
			break
		}
		if res, ok, err := s.run(ctx, m, emit); ok {
			return res, err
		}
	}
	return c.runCall(ctx, m, emit)
}

// runCall makes one call as a Run RPC of its own.
func (c *engineClient) runCall(ctx context.Context, m *pb.RunRequest, emit Emitter) (*RunResult, error) {
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
