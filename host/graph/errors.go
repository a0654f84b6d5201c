package graph

import "errors"

var (
	// ErrInvalidDefinition is returned by Definition.Validate and New when a
	// definition breaks a structural rule.
	ErrInvalidDefinition = errors.New("invalid graph definition")
	// ErrInvalidEvent is returned by State.Apply when an event does not fit
	// the state at its place in the record: a dispatch that differs from what
	// the graph decides at that prefix, a result for a position that is not
	// in flight, an unknown node. The record is never silently accepted.
	// Code INVALID_EVENT.
	ErrInvalidEvent = errors.New("INVALID_EVENT")
)
