package sdk

import "fmt"

// Fail returns a *Failure of the given kind whose message is formatted as
// by fmt.Errorf (so %w renders its operand's text; the chain itself is not
// kept — the host receives only kind and message). The message must not
// contain secrets. For a rate limit with a back-off hint, build the Failure
// directly and set RetryAfter.
func Fail(kind FailureKind, format string, args ...any) error {
	return &Failure{Kind: kind, Message: fmt.Errorf(format, args...).Error()}
}
