package plugin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	pb "github.com/obversa/obversa/plugin/internal/pluginv1"
)

// This file is the host side of the optional Conformance service and the
// wire-level access the conformance kit (sdk/conformance) needs to check a
// plugin more closely than the host's own calls do. The host never uses it
// during a run.

// controllerShutdown is go-plugin's controller method (service
// plugin.GRPCController, rpc Shutdown(Empty) returns (Empty)), the graceful
// stop go-plugin's Kill begins with.
const controllerShutdown = "/plugin.GRPCController/Shutdown"

// ConformanceClient calls a plugin's optional Conformance service. Calls
// on a plugin that does not serve it fail with an error wrapping
// ErrWrongType; other errors are classified as for Engine calls (a typed
// *Failure, ErrPluginExited, ErrPluginTransport, the caller's ctx.Err()).
type ConformanceClient struct {
	remote
	client pb.ConformanceClient
}

// Conformance returns the client of the plugin's Conformance service.
func (c *Client) Conformance() *ConformanceClient {
	return &ConformanceClient{remote: c.remote, client: pb.NewConformanceClient(c.conn)}
}

// Scenarios returns the scenario kinds the plugin can produce; kinds this
// host does not know are dropped.
func (c *ConformanceClient) Scenarios(ctx context.Context) ([]ScenarioKind, error) {
	cctx, cancel := c.join(ctx)
	defer cancel()
	resp, err := c.client.Scenarios(cctx, &pb.ScenariosRequest{})
	if err != nil {
		return nil, c.callError(ctx, "Conformance.Scenarios", err)
	}
	var out []ScenarioKind
	for _, w := range resp.GetKinds() {
		if k, ok := scenarioKindGo[w]; ok {
			out = append(out, k)
		}
	}
	return out, nil
}

// Arm asks the plugin to produce s in the next Run whose AttemptID is
// attemptID. A scenario with an invalid kind or failure kind gives an error
// wrapping ErrInvalidRequest before anything is sent.
func (c *ConformanceClient) Arm(ctx context.Context, attemptID string, s Scenario) error {
	if !s.Kind.Valid() || (s.Kind == ScenarioFailure && !s.Failure.Valid()) {
		return fmt.Errorf("plugin %q: Conformance.Arm: invalid scenario %s: %w", c.name, s, ErrInvalidRequest)
	}
	cctx, cancel := c.join(ctx)
	defer cancel()
	if _, err := c.client.Arm(cctx, &pb.ArmRequest{AttemptId: attemptID, Scenario: scenarioToProto(s)}); err != nil {
		return c.callError(ctx, "Conformance.Arm", err)
	}
	return nil
}

// Settled waits up to wait for the plugin's Run handler of attemptID to
// return and reports what it produced. The plugin answers when the Run
// settles or wait has passed, whichever is first; ctx should allow for
// wait plus a round trip. A terminal message that cannot be decoded gives
// an error wrapping ErrProtocol.
func (c *ConformanceClient) Settled(ctx context.Context, attemptID string, wait time.Duration) (*Settlement, error) {
	cctx, cancel := c.join(ctx)
	defer cancel()
	resp, err := c.client.Settled(cctx, &pb.SettledRequest{AttemptId: attemptID, WaitMs: durationToMs(wait)})
	if err != nil {
		return nil, c.callError(ctx, "Conformance.Settled", err)
	}
	out := &Settlement{Started: resp.GetStarted(), Settled: resp.GetSettled()}
	if t := resp.GetTerminal(); t != nil {
		m, err := wireMessageFromProto(t)
		if err != nil {
			return nil, c.protocolError("Conformance.Settled", err)
		}
		out.Result, out.Failure = m.Result, m.Failure
	}
	return out, nil
}

// ModelCalls returns how many model calls the plugin has made since it
// started.
func (c *ConformanceClient) ModelCalls(ctx context.Context) (int64, error) {
	cctx, cancel := c.join(ctx)
	defer cancel()
	resp, err := c.client.ModelCalls(cctx, &pb.ModelCallsRequest{})
	if err != nil {
		return 0, c.callError(ctx, "Conformance.ModelCalls", err)
	}
	return int64(min(resp.GetCount(), 1<<63-1)), nil
}

// WireMessage is one message of a Run stream as the plugin sent it: exactly
// one of Event, Result and Failure is set, or Empty for a message with no
// field set (which the host ignores). Nothing is validated: a result may
// have several final parts or parts of unknown kinds (named
// "unknown(<n>)"), an event may carry invalid JSON.
type WireMessage struct {
	Event   *RunEvent
	Result  *RunResult
	Failure *Failure
	Empty   bool
}

// Terminal reports whether m ends a Run (a result or a failure).
func (m WireMessage) Terminal() bool { return m.Result != nil || m.Failure != nil }

// CallStatus is a gRPC status that ended a call, as the plugin (or the
// transport) gave it.
type CallStatus struct {
	// Code is the gRPC status code's name ("ResourceExhausted").
	Code string
	// Message is the status message.
	Message string
	// Failure is the status's Failure detail, nil when it has none.
	Failure *Failure
}

// Error implements error.
func (s *CallStatus) Error() string {
	if s.Failure != nil {
		return fmt.Sprintf("gRPC status %s with failure %s", s.Code, s.Failure.Error())
	}
	return fmt.Sprintf("gRPC status %s: %s", s.Code, s.Message)
}

// WireRun is a Run stream read message by message, for the conformance
// kit; the host's Engine.Run stops at the first terminal message and
// validates it, WireRun does neither.
type WireRun struct {
	stream pb.Engine_RunClient
	cancel context.CancelFunc
}

// RunWire starts a Run on the plugin's Engine service with req and returns
// its stream. Cancelling ctx (or calling Close) cancels the stream. It
// returns an error wrapping ErrInvalidRequest for an unknown Purpose, or the
// classified error of opening the stream.
func (c *Client) RunWire(ctx context.Context, req RunRequest) (*WireRun, error) {
	m, err := runRequestToProto(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("plugin %q: Run: %w: %w", c.name, err, ErrInvalidRequest)
	}
	sctx, cancel := context.WithCancel(ctx)
	stream, err := pb.NewEngineClient(c.conn).Run(sctx, m)
	if err != nil {
		cancel()
		return nil, c.remote.callError(ctx, "Run", err)
	}
	return &WireRun{stream: stream, cancel: cancel}, nil
}

// Recv returns the next message. At the end of the stream it returns io.EOF
// when the plugin closed it cleanly, or a *CallStatus when it ended with a
// gRPC status (including the Canceled status of a cancelled ctx). A
// message that cannot be decoded at all (a usage count beyond int64) gives
// an error wrapping ErrProtocol.
func (w *WireRun) Recv() (WireMessage, error) {
	m, err := w.stream.Recv()
	if errors.Is(err, io.EOF) {
		return WireMessage{}, io.EOF
	}
	if err != nil {
		return WireMessage{}, statusOf(err)
	}
	out, err := wireMessageFromProto(m)
	if err != nil {
		return WireMessage{}, fmt.Errorf("Run: %w: %w", err, ErrProtocol)
	}
	return out, nil
}

// Close cancels the stream; it is safe to call more than once.
func (w *WireRun) Close() { w.cancel() }

// statusOf converts a gRPC error to a *CallStatus.
func statusOf(err error) *CallStatus {
	st := status.Convert(err)
	out := &CallStatus{Code: st.Code().String(), Message: st.Message()}
	if f, ok := failureFromStatus(st); ok {
		out.Failure = f
	}
	return out
}

// wireMessageFromProto decodes m without validating it.
func wireMessageFromProto(m *pb.RunMessage) (WireMessage, error) {
	return decodeWireMessage(m, rawResultFromProto)
}

// rawResultFromProto decodes a result without validating it; a part of an
// unknown kind is named "unknown(<n>)".
func rawResultFromProto(m *pb.RunResult) (*RunResult, error) {
	r, err := decodeResult(m, func(_ int, k pb.PartKind) (PartKind, error) {
		return PartKind(fmt.Sprintf("unknown(%d)", k)), nil
	})
	if err != nil {
		// Naming unknown kinds never fails, so this is the usage's error.
		return nil, fmt.Errorf("result usage: %w", err)
	}
	return r, nil
}

// Shutdown asks the plugin to stop through go-plugin's controller service
// (GRPCController.Shutdown, the graceful stop Close begins with) and waits
// until the process has exited or ctx ends. It returns nil once the process
// has exited, an error wrapping ctx.Err() while it still runs, or the
// classified error of the Shutdown call when the plugin answered it with an
// error other than the connection closing. The Client must still be closed.
func (c *Client) Shutdown(ctx context.Context) error {
	callErr := make(chan error, 1)
	go func() {
		cctx, cancel := c.remote.join(ctx)
		defer cancel()
		callErr <- c.conn.Invoke(cctx, controllerShutdown, &emptypb.Empty{}, &emptypb.Empty{})
	}()
	for {
		select {
		case <-c.remote.done.Done():
			return nil
		case <-ctx.Done():
			return fmt.Errorf("plugin %q: still running after the controller's Shutdown: %w", c.name, ctx.Err())
		case err := <-callErr:
			callErr = nil
			if err == nil {
				continue
			}
			// A plugin that exits at once may break the call; only a
			// status it chose to answer with is an error.
			switch status.Code(err) {
			case codes.Unavailable, codes.Canceled:
				continue
			case codes.Unimplemented:
				return fmt.Errorf("plugin %q does not serve go-plugin's controller (%s): %w", c.name, controllerShutdown, ErrWrongType)
			}
			if !c.remote.exited() {
				return fmt.Errorf("plugin %q: controller Shutdown: %w: %w", c.name, statusOf(err), ErrPluginTransport)
			}
		}
	}
}

// Kill ends the plugin process at once with SIGKILL, without the graceful
// stop, and then releases the Client as Close does, returning what Close
// returns. The conformance kit uses it to clean up after plugins it
// expects to misbehave.
func (c *Client) Kill() error {
	c.stopProc()
	return c.Close()
}
