package runstate

import "github.com/obversa/obversa/host/graph"

// NodeError is why one node of a failed graph failed.
type NodeError struct {
	Code     string `json:"code"`
	Message  string `json:"message"`
	Position string `json:"position,omitempty"`
}

// CodeBlocked names a required node that never ran because a dependency
// failed for good.
const CodeBlocked = "BLOCKED"

// CodeStoppedOnError names a required node that did not start, or did not
// finish, because a required node failed for good under stop_on_error,
// which stops new dispatches (docs/run-file.md, "graph").
const CodeStoppedOnError = "STOPPED_ON_ERROR"

// Messages of the node errors a graph's state explains (UnfinishedError).
const (
	msgDependencyFailed = "a dependency failed"
	msgNotStarted       = "not started: the run stopped on an error (stop_on_error)"
	msgNotFinished      = "not finished: the run stopped on an error (stop_on_error)"
)

// UnfinishedError is why required vertex id of a graph that failed has no
// failure of its own: BLOCKED when a dependency failed for good (or is
// blocked so), else STOPPED_ON_ERROR, not started when stop_on_error
// blocked it before it began, not finished when it had begun (a loop
// between rounds, a for_each node with instances not yet dispatched).
func UnfinishedError(g *graph.State, id string) NodeError {
	switch {
	case g.DependencyFailed(id) || !g.Stopped():
		return NodeError{Code: CodeBlocked, Message: msgDependencyFailed}
	case g.Blocked(id):
		return NodeError{Code: CodeStoppedOnError, Message: msgNotStarted}
	}
	return NodeError{Code: CodeStoppedOnError, Message: msgNotFinished}
}
