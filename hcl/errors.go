package hcl

import (
	"errors"
	"fmt"
)

// Errors returned by RenderPrompt and RenderInput, always wrapped in a
// *RenderError. Configuration mistakes found while decoding are never
// errors: they are hclv2.Diagnostics with a source range.
var (
	// ErrMissingResult is returned when a template references
	// input.results.<node> and the results given to the renderer hold no
	// entry for that node (for example an optional dependency that failed,
	// or a node a finalizer names that did not pass).
	ErrMissingResult = errors.New("template references a node result that is not available")

	// ErrMissingAttribute is returned when a template traverses into a node
	// result (input.results.<node>.<attr>…) and the result has no such
	// attribute, index or key.
	ErrMissingAttribute = errors.New("template references an attribute the node result does not have")

	// ErrInvalidResult is returned when a node result given to the renderer
	// is not valid JSON.
	ErrInvalidResult = errors.New("node result is not valid JSON")

	// ErrInvalidInput is returned by RenderInput when the stored input is
	// not valid JSON.
	ErrInvalidInput = errors.New("node input is not valid JSON")

	// ErrTemplate is returned when a template does not parse or its
	// evaluation fails for a reason other than a missing result or
	// attribute (a wrong type, an unknown function, a prompt that does not
	// render to a string).
	ErrTemplate = errors.New("template evaluation failed")

	// ErrTooLarge is returned when a rendered prompt or input is larger
	// than MaxRenderedBytes.
	ErrTooLarge = errors.New("the rendered text is too large")

	// ErrForEachItems is returned by Scope.Items when a for_each source
	// renders to something other than a list of unique strings or an
	// object.
	ErrForEachItems = errors.New("for_each is not a list of unique strings or an object")
)

// RenderError is the error returned by RenderPrompt and RenderInput. It
// wraps exactly one of the sentinel errors above; match it with errors.Is
// and inspect it with errors.As.
type RenderError struct {
	// Node is the node named by the failing reference, or "" when the
	// failure is not tied to one node.
	Node string
	// Reference is the failing reference as written in the template, for
	// example "input.results.count.stdout", or "" when there is none.
	Reference string
	// Field is the JSON path, inside a node input, of the template string
	// that failed (for example "command[1]"); "" for prompts.
	Field string
	// Detail is a human-readable explanation (the HCL diagnostic text
	// when there is one).
	Detail string
	// Err is the sentinel: ErrMissingResult, ErrMissingAttribute,
	// ErrInvalidResult, ErrInvalidInput, ErrTemplate, ErrTooLarge or
	// ErrForEachItems.
	Err error
}

// Error renders the error on one line.
func (e *RenderError) Error() string {
	msg := e.Err.Error()
	if e.Field != "" {
		msg = fmt.Sprintf("input field %s: %s", e.Field, msg)
	}
	switch {
	case e.Reference != "":
		msg += fmt.Sprintf(": %s", e.Reference)
	case e.Node != "":
		msg += fmt.Sprintf(": node %q", e.Node)
	}
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	return msg
}

// Unwrap returns the sentinel error.
func (e *RenderError) Unwrap() error { return e.Err }
