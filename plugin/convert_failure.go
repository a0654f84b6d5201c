package plugin

import (
	"context"
	"errors"

	pb "github.com/obversa/obversa/plugin/internal/pluginv1"
)

var failureKindWire = map[FailureKind]pb.FailureKind{
	FailureAuth:             pb.FailureKind_FAILURE_KIND_AUTH,
	FailureBilling:          pb.FailureKind_FAILURE_KIND_BILLING,
	FailureMissingCLI:       pb.FailureKind_FAILURE_KIND_MISSING_CLI,
	FailureModelUnavailable: pb.FailureKind_FAILURE_KIND_MODEL_UNAVAILABLE,
	FailureInvalidConfig:    pb.FailureKind_FAILURE_KIND_INVALID_CONFIG,
	FailureQuota:            pb.FailureKind_FAILURE_KIND_QUOTA,
	FailureRateLimit:        pb.FailureKind_FAILURE_KIND_RATE_LIMIT,
	FailureTransient:        pb.FailureKind_FAILURE_KIND_TRANSIENT,
	FailureTimeout:          pb.FailureKind_FAILURE_KIND_TIMEOUT,
	FailureAborted:          pb.FailureKind_FAILURE_KIND_ABORTED,
	FailureUnknown:          pb.FailureKind_FAILURE_KIND_UNKNOWN,
}

var failureKindGo = invert(failureKindWire)

// failureToProto encodes f; an empty or unknown kind becomes UNKNOWN.
func failureToProto(f *Failure) *pb.Failure {
	kind, ok := failureKindWire[f.Kind]
	if !ok {
		kind = pb.FailureKind_FAILURE_KIND_UNKNOWN
	}
	return &pb.Failure{
		Kind:         kind,
		Message:      wireText(f.Message),
		RetryAfterMs: durationToMs(f.RetryAfter),
		Provider:     wireText(f.Provider),
		Model:        wireText(f.Model),
	}
}

// failureFromProto decodes m; kinds this host does not know (newer
// plugins, UNSPECIFIED) become FailureUnknown, which routes conservatively.
func failureFromProto(m *pb.Failure) *Failure {
	kind, ok := failureKindGo[m.GetKind()]
	if !ok {
		kind = FailureUnknown
	}
	return &Failure{
		Kind:       kind,
		Message:    m.GetMessage(),
		RetryAfter: msToDuration(m.GetRetryAfterMs()),
		Provider:   m.GetProvider(),
		Model:      m.GetModel(),
	}
}

// errorToFailure turns an error returned by a plugin implementation into
// the Failure sent to the host: a *Failure in its chain is used as is, a
// context error becomes aborted or timeout, anything else is unknown.
func errorToFailure(err error) *Failure {
	var f *Failure
	switch {
	case errors.As(err, &f):
		out := *f
		if !out.Kind.Valid() {
			out.Kind = FailureUnknown
		}
		return &out
	case errors.Is(err, context.Canceled):
		return &Failure{Kind: FailureAborted, Message: err.Error()}
	case errors.Is(err, context.DeadlineExceeded):
		return &Failure{Kind: FailureTimeout, Message: err.Error()}
	default:
		return &Failure{Kind: FailureUnknown, Message: err.Error()}
	}
}
