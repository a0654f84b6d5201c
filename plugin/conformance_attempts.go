package plugin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/obversa/obversa/plugin/internal/pluginv1"
)

// WireAttempts is an Attempts stream read message by message, for the
// conformance kit: the host's Engine.Run hands each call only its own
// messages up to the first terminal one, WireAttempts shows all of them.
type WireAttempts struct {
	stream pb.Engine_AttemptsClient
	cancel context.CancelFunc
	sendMu sync.Mutex
	next   uint64
	// pending is what the last received AttemptMessages still holds.
	pending []*pb.AttemptMessage
}

// WireAttemptMessage is one message of an Attempts stream: the call it
// belongs to, and either that call's Run stream message or, when Status is
// set, the status the call ended with instead.
type WireAttemptMessage struct {
	Call    uint64
	Message WireMessage
	Status  *CallStatus
}

// AttemptsWire opens the plugin's Attempts stream and waits, within ctx,
// for its response headers. It returns an error wrapping ErrWrongType when
// the plugin answers UNIMPLEMENTED (it does not serve the stream), or the
// classified error of opening it. The stream lives until Close, the
// plugin's exit or its end, not as long as ctx.
func (c *Client) AttemptsWire(ctx context.Context) (*WireAttempts, error) {
	sctx, cancel := c.remote.join(context.Background())
	stop := context.AfterFunc(ctx, cancel)
	defer stop()
	stream, err := pb.NewEngineClient(c.conn).Attempts(sctx)
	if err == nil {
		var md map[string][]string
		md, err = stream.Header()
		if err == nil && md == nil {
			_, err = stream.Recv()
			if err == nil {
				err = status.Error(codes.Internal, "a message before the response headers")
			}
		}
	}
	if err != nil {
		cancel()
		return nil, c.remote.callError(ctx, "Attempts", err)
	}
	return &WireAttempts{stream: stream, cancel: cancel}, nil
}

// Start sends a call with req and returns its id (1, 2, … in order).
func (w *WireAttempts) Start(ctx context.Context, req RunRequest) (uint64, error) {
	m, err := runRequestToProto(ctx, req)
	if err != nil {
		return 0, fmt.Errorf("Attempts: %w: %w", err, ErrInvalidRequest)
	}
	w.sendMu.Lock()
	defer w.sendMu.Unlock()
	w.next++
	if err := w.stream.Send(&pb.AttemptRequest{Call: w.next, Request: &pb.AttemptRequest_Run{Run: m}}); err != nil {
		return 0, fmt.Errorf("Attempts: sending call %d: %w", w.next, err)
	}
	return w.next, nil
}

// Cancel asks the plugin to cancel call.
func (w *WireAttempts) Cancel(call uint64) error {
	w.sendMu.Lock()
	defer w.sendMu.Unlock()
	return w.stream.Send(&pb.AttemptRequest{Call: call, Request: &pb.AttemptRequest_Cancel{Cancel: &pb.AttemptRequest_CancelCall{}}})
}

// CloseSend ends the host's side of the stream: no more calls.
func (w *WireAttempts) CloseSend() error {
	w.sendMu.Lock()
	defer w.sendMu.Unlock()
	return w.stream.CloseSend()
}

// Recv returns the next message, one at a time even when the plugin sent
// several together. At the end of the stream it returns io.EOF when the
// plugin closed it cleanly, or a *CallStatus. A message that cannot be
// decoded at all gives an error wrapping ErrProtocol.
func (w *WireAttempts) Recv() (WireAttemptMessage, error) {
	for len(w.pending) == 0 {
		msgs, err := w.stream.Recv()
		if errors.Is(err, io.EOF) {
			return WireAttemptMessage{}, io.EOF
		}
		if err != nil {
			return WireAttemptMessage{}, statusOf(err)
		}
		w.pending = msgs.GetMessages()
	}
	m := w.pending[0]
	w.pending = w.pending[1:]
	out := WireAttemptMessage{Call: m.GetCall()}
	if code := m.GetStatusCode(); code != 0 {
		out.Status = statusOf(status.Error(codes.Code(code), m.GetStatusMessage()))
		return out, nil
	}
	msg, err := wireMessageFromProto(m.GetMessage())
	if err != nil {
		return out, fmt.Errorf("Attempts: call %d: %w: %w", out.Call, err, ErrProtocol)
	}
	out.Message = msg
	return out, nil
}

// Close cancels the stream; it is safe to call more than once.
func (w *WireAttempts) Close() { w.cancel() }
