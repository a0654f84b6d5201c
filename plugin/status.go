package plugin

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/obversa/obversa/plugin/internal/pluginv1"
)

// exitGrace is how long a client waits, after a call failed with a broken
// connection, for go-plugin to notice that the process exited, so that the
// error says ErrPluginExited rather than a plain transport error.
const exitGrace = time.Second

// failureCode is the gRPC code a unary error with a Failure detail carries.
// Only the detail is authoritative; the code helps generic gRPC tooling.
var failureCode = map[FailureKind]codes.Code{
	FailureAuth:             codes.Unauthenticated,
	FailureBilling:          codes.FailedPrecondition,
	FailureMissingCLI:       codes.FailedPrecondition,
	FailureModelUnavailable: codes.NotFound,
	FailureInvalidConfig:    codes.InvalidArgument,
	FailureQuota:            codes.ResourceExhausted,
	FailureRateLimit:        codes.ResourceExhausted,
	FailureTransient:        codes.Unavailable,
	FailureTimeout:          codes.DeadlineExceeded,
	FailureAborted:          codes.Aborted,
	FailureUnknown:          codes.Unknown,
}

// failureStatus returns the gRPC error a plugin answers a unary call with:
// a status whose single detail is the encoded Failure.
func failureStatus(f *Failure) error {
	code, ok := failureCode[f.Kind]
	if !ok {
		code = codes.Unknown
	}
	st, err := status.New(code, f.Error()).WithDetails(failureToProto(f))
	if err != nil {
		// Only a detail that cannot be marshalled fails here, and Failure
		// always can; keep the code and text in any case.
		return status.Error(code, f.Error())
	}
	return st.Err()
}

// failureFromStatus returns the Failure detail of a gRPC error, if any.
func failureFromStatus(st *status.Status) (*Failure, bool) {
	for _, d := range st.Details() {
		if m, ok := d.(*pb.Failure); ok {
			return failureFromProto(m), true
		}
	}
	return nil, false
}

// remote is what every host-side shim knows about its plugin process.
type remote struct {
	// name is the plugin name from the run file, for error messages.
	name string
	// done is cancelled by go-plugin when the plugin process has exited.
	done context.Context
	// path is the binary the process runs, for ExitedError ("" outside
	// a launch).
	path string
	// status describes how the process ended, waiting up to its argument
	// (procRunner.exitWithin); nil outside a launch.
	status func(time.Duration) string
}

// join returns a context that ends when ctx ends or the plugin process
// exits, whichever is first.
func (r *remote) join(ctx context.Context) (context.Context, context.CancelFunc) {
	joined, cancel := context.WithCancel(ctx)
	if r.done == nil {
		return joined, cancel
	}
	stop := context.AfterFunc(r.done, cancel)
	return joined, func() {
		stop()
		cancel()
	}
}

// exited reports whether the plugin process has exited, waiting up to
// exitGrace for go-plugin to notice.
func (r *remote) exited() bool {
	if r.done == nil {
		return false
	}
	t := time.NewTimer(exitGrace)
	defer t.Stop()
	select {
	case <-r.done.Done():
		return true
	case <-t.C:
		return false
	}
}

// callError classifies err returned by a call to method made under ctx (the
// caller's context, not the joined one): a typed *Failure as is; the
// caller's cancellation wrapping ctx.Err(); a dead process wrapping
// ErrPluginExited; an oversize message ErrMessageTooLarge; an unknown service
// ErrWrongType; a status error without a Failure detail from the plugin
// ErrProtocol; anything else ErrPluginTransport.
// deadlineSkew bounds how much earlier a plugin may see a propagated
// deadline pass than the caller does.
const deadlineSkew = 50 * time.Millisecond

func (r *remote) callError(ctx context.Context, method string, err error) error {
	st, isStatus := status.FromError(err)
	if isStatus {
		if f, ok := failureFromStatus(st); ok {
			return f
		}
	}
	if isStatus && (st.Code() == codes.Canceled || st.Code() == codes.DeadlineExceeded) {
		// The plugin sees the propagated deadline pass a moment before the
		// caller's own timer fires: give ctx that moment, so a deadline is
		// reported as the caller's deadline and not as a transport fault.
		if d, ok := ctx.Deadline(); ok && time.Until(d) < deadlineSkew {
			select {
			case <-ctx.Done():
			case <-time.After(deadlineSkew):
			}
		}
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("plugin %q: %s: %w", r.name, method, ctxErr)
	}
	if !isStatus {
		return fmt.Errorf("plugin %q: %s: %v: %w", r.name, method, err, ErrPluginTransport)
	}
	switch st.Code() {
	case codes.Unavailable, codes.Canceled, codes.Internal:
		if r.exited() {
			return r.exitedError(method)
		}
		return fmt.Errorf("plugin %q: %s: %s: %w", r.name, method, st.Message(), ErrPluginTransport)
	case codes.ResourceExhausted:
		return fmt.Errorf("plugin %q: %s: message exceeds the %d MiB gRPC limit: %s: %w",
			r.name, method, MaxMessageBytes>>20, st.Message(), ErrMessageTooLarge)
	case codes.Unimplemented:
		return fmt.Errorf("plugin %q: %s is not implemented by the plugin: %w", r.name, method, ErrWrongType)
	case codes.DeadlineExceeded, codes.DataLoss:
		return fmt.Errorf("plugin %q: %s: %s: %w", r.name, method, st.Message(), ErrPluginTransport)
	default:
		return fmt.Errorf("plugin %q: %s: error without a typed failure (%s: %s): %w",
			r.name, method, st.Code(), st.Message(), ErrProtocol)
	}
}

// protocolError reports a protocol violation by the plugin in method.
func (r *remote) protocolError(method string, err error) error {
	return fmt.Errorf("plugin %q: %s: %w: %w", r.name, method, err, ErrProtocol)
}

// errNilAnswer is what a server shim reports when an implementation
// returned neither a value nor an error.
var errNilAnswer = errors.New("implementation returned neither a value nor an error")

// exitedError is the *ExitedError of a call to method that failed because
// the process exited.
func (r *remote) exitedError(method string) error {
	e := &ExitedError{Name: r.name, Path: r.path, Method: method}
	if r.status != nil {
		e.Status = r.status(exitGrace)
	}
	return e
}
