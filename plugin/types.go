package plugin

import (
	"context"
	"encoding/json"
	"time"
)

// Type names a plugin kind. It is also the go-plugin plugin-set key the
// host dispenses.
type Type string

// Plugin types: the plugin-set keys `engine`, `node` and `policy`
// (docs/policies.md for the last).
const (
	TypeEngine Type = "engine"
	TypeNode   Type = "node"
	TypePolicy Type = "policy"
)

// FailureKind classifies why an engine or binding call failed. It travels as
// a typed gRPC status detail, never parsed from message text (docs/writing-plugins.md).
type FailureKind string

// Failure kinds of protocol v1 (docs/writing-plugins.md).
const (
	FailureAuth             FailureKind = "auth"
	FailureBilling          FailureKind = "billing"
	FailureMissingCLI       FailureKind = "missing_cli"
	FailureModelUnavailable FailureKind = "model_unavailable"
	FailureInvalidConfig    FailureKind = "invalid_config"
	FailureQuota            FailureKind = "quota"
	FailureRateLimit        FailureKind = "rate_limit"
	FailureTransient        FailureKind = "transient"
	FailureTimeout          FailureKind = "timeout"
	FailureAborted          FailureKind = "aborted"
	FailureUnknown          FailureKind = "unknown"
)

// FailureKinds lists every failure kind in wire order.
var FailureKinds = []FailureKind{
	FailureAuth, FailureBilling, FailureMissingCLI, FailureModelUnavailable,
	FailureInvalidConfig, FailureQuota, FailureRateLimit, FailureTransient,
	FailureTimeout, FailureAborted, FailureUnknown,
}

// Valid reports whether k is one of FailureKinds.
func (k FailureKind) Valid() bool {
	for _, v := range FailureKinds {
		if v == k {
			return true
		}
	}
	return false
}

// Failure is a typed failure of an engine or binding call. Plugins return it
// (or wrap it) from Admit, Run and Invoke; the host receives it back as
// *Failure through errors.As, with the same Kind.
type Failure struct {
	// Kind classifies the failure; the zero value is treated as FailureUnknown.
	Kind FailureKind
	// Message is a human-readable explanation. It must not contain secrets.
	Message string
	// RetryAfter is the provider's back-off hint for FailureRateLimit; 0 when
	// none was given.
	RetryAfter time.Duration
	// Provider and Model name the identity the failure was reported for, when
	// the engine knows it (used to retire the reported target too).
	Provider string
	Model    string
}

// Error implements error as "<kind>: <message>".
func (f *Failure) Error() string {
	k := f.Kind
	if k == "" {
		k = FailureUnknown
	}
	if f.Message == "" {
		return string(k)
	}
	return string(k) + ": " + f.Message
}

// Identity names an engine target: which adapter, provider, model family,
// model and tools. Empty strings mean unknown.
type Identity struct {
	Adapter     string   `json:"adapter"`
	Provider    string   `json:"provider"`
	ModelFamily string   `json:"model_family"`
	Model       string   `json:"model"`
	Tools       []string `json:"tools"`
}

// Or returns id with each empty field (a nil Tools) taken from d.
func (id Identity) Or(d Identity) Identity {
	if id.Adapter == "" {
		id.Adapter = d.Adapter
	}
	if id.Provider == "" {
		id.Provider = d.Provider
	}
	if id.ModelFamily == "" {
		id.ModelFamily = d.ModelFamily
	}
	if id.Model == "" {
		id.Model = d.Model
	}
	if id.Tools == nil {
		id.Tools = d.Tools
	}
	return id
}

// Usage is token usage. Unknown usage (Known false) is never zero: callers
// must keep it unknown at every level of aggregation (docs/writing-plugins.md).
type Usage struct {
	Known         bool  `json:"known"`
	Input         int64 `json:"input,omitempty"`
	Output        int64 `json:"output,omitempty"`
	CacheRead     int64 `json:"cache_read,omitempty"`
	CacheCreation int64 `json:"cache_creation,omitempty"`
}

// Capabilities describes what an engine supports.
type Capabilities struct {
	Admit            bool `json:"admit"`
	StructuredOutput bool `json:"structured_output"`
	Tools            bool `json:"tools"`
	// MaxConcurrency is the number of concurrent Run calls the plugin
	// accepts; 0 means unlimited.
	MaxConcurrency int `json:"max_concurrency"`
}

// Description is a plugin's answer to Describe.
type Description struct {
	// Name is the adapter name for engines, the binding name for nodes.
	Name    string `json:"name"`
	Version string `json:"version"`
	// Types lists the plugin types this binary serves.
	Types        []Type        `json:"types"`
	Capabilities Capabilities  `json:"capabilities"`
	FailureKinds []FailureKind `json:"failure_kinds,omitempty"`
}

// Severity of a Diagnostic.
type Severity string

// Diagnostic severities.
const (
	SeverityError   Severity = "error"
	SeverityWarning Severity = "warning"
)

// Diagnostic is a user-facing problem with plugin configuration; it travels
// as data, not as a Go error.
type Diagnostic struct {
	Severity  Severity `json:"severity"`
	Summary   string   `json:"summary"`
	Detail    string   `json:"detail,omitempty"`
	Attribute string   `json:"attribute,omitempty"`
}

// Purpose says why an engine Run is made.
type Purpose string

// Run purposes.
const (
	PurposeOrdinary  Purpose = "ordinary"
	PurposePreflight Purpose = "preflight"
)

// AdmitRequest asks an engine to check a target statically, with no model
// call.
type AdmitRequest struct {
	Target Identity
}

// AdmitResponse is an engine's static answer: Supported false means the
// engine cannot check the target statically ("unsupported"), which is never
// a success. A typed *Failure error means the target is known not to work.
type AdmitResponse struct {
	Supported bool
	// Selection is the identity the engine would use for the target; set
	// only when Supported.
	Selection Identity
	// Reason says why static admission is unsupported; informational, set
	// only when not Supported.
	Reason string
}

// RunRequest is one engine call. A live preflight probe has Purpose
// PurposePreflight, no tools and no workspace (docs/writing-plugins.md).
type RunRequest struct {
	// Purpose is PurposeOrdinary or PurposePreflight; empty is sent as
	// ordinary.
	Purpose Purpose
	// RunID, NodeID, Position and AttemptID identify the attempt
	// (docs/architecture.md#the-executor).
	RunID     string
	NodeID    string
	Position  string
	AttemptID string
	// Target is the identity to call.
	Target Identity
	Prompt string
	// OutputSchema, when non-empty, asks for structured JSON output.
	OutputSchema json.RawMessage
	Tools        []string
	// WorkspaceDir is the run's workspace root; empty for preflight probes.
	WorkspaceDir  string
	WorkspaceMode string
	// Timeout is the attempt's remaining deadline (millisecond precision
	// on the wire); 0 means none, in which case the host sends the time
	// left until the context's deadline, if it has one.
	Timeout time.Duration
}

// EventKind names a streamed Run event.
type EventKind string

// Streamed event kinds.
const (
	EventText       EventKind = "text"
	EventThinking   EventKind = "thinking"
	EventToolUse    EventKind = "tool_use"
	EventToolResult EventKind = "tool_result"
	EventUsage      EventKind = "usage"
)

// RunEvent is one streamed, non-terminal event of a Run.
type RunEvent struct {
	Kind EventKind
	// Text is the delta for text and thinking events.
	Text string
	// ToolName, ToolID and ToolJSON describe tool events.
	ToolName string
	ToolID   string
	ToolJSON json.RawMessage
	// Usage is set for usage events.
	Usage Usage
}

// PartKind names a result part.
type PartKind string

// Result part kinds.
const (
	PartText       PartKind = "text"
	PartThinking   PartKind = "thinking"
	PartToolUse    PartKind = "tool_use"
	PartToolResult PartKind = "tool_result"
	PartStructured PartKind = "structured"
)

// Part is one ordered part of a Run result. Exactly one part of a result has
// Final set, and it is a text or structured part.
type Part struct {
	Kind     PartKind        `json:"kind"`
	Text     string          `json:"text,omitempty"`
	JSON     json.RawMessage `json:"json,omitempty"`
	ToolName string          `json:"tool_name,omitempty"`
	ToolID   string          `json:"tool_id,omitempty"`
	Final    bool            `json:"final,omitempty"`
}

// RunResult is the terminal success of a Run.
type RunResult struct {
	Parts      []Part   `json:"parts"`
	Usage      Usage    `json:"usage"`
	Requested  Identity `json:"requested"`
	Effective  Identity `json:"effective"`
	StopReason string   `json:"stop_reason,omitempty"`
}

// Final returns the final part, or false if there is none.
func (r *RunResult) Final() (Part, bool) {
	for _, p := range r.Parts {
		if p.Final {
			return p, true
		}
	}
	return Part{}, false
}

// Emitter receives streamed events during a Run. An error from it (the host
// went away) should make the engine stop and return.
type Emitter func(RunEvent) error

// Engine is an adapter to a model CLI or API. Every method honours ctx:
// cancelling a Run's context must stop the attempt within 3 s and return a
// FailureAborted failure.
type Engine interface {
	// Describer: the adapter's name, version and capabilities, and its
	// configuration.
	Describer
	// Admit checks a target statically, with no model call: a supported
	// selection, unsupported (never a success), or a typed *Failure when the
	// target is known not to work.
	Admit(ctx context.Context, req AdmitRequest) (*AdmitResponse, error)
	// Run makes one engine call, passing streamed events to emit, and
	// returns a result that passes RunResult.Validate or a typed *Failure.
	Run(ctx context.Context, req RunRequest, emit Emitter) (*RunResult, error)
}

// InvokeRequest is one node binding call.
type InvokeRequest struct {
	// RunID, NodeID, Position and AttemptID identify the attempt
	// (docs/architecture.md#the-executor).
	RunID     string
	NodeID    string
	Position  string
	AttemptID string
	// Input is the node's dispatch input as JSON.
	Input json.RawMessage
	// WorkspaceDir is the run's workspace root.
	WorkspaceDir string
	// Timeout is the attempt's remaining deadline (millisecond precision
	// on the wire); 0 means none.
	Timeout time.Duration
}

// NodeBinding is a data step. Invoke returns the node's output as JSON or a
// typed *Failure.
type NodeBinding interface {
	// Describer: the binding's name and version, and its configuration.
	Describer
	// Invoke runs the binding on one dispatch input and returns its output
	// as valid JSON (nil is sent as null).
	Invoke(ctx context.Context, req InvokeRequest) (json.RawMessage, error)
}
