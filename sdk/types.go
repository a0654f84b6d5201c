package sdk

import "github.com/obversa/obversa/plugin"

// Aliases of the plugin protocol types a plugin implements or returns; see
// package plugin for their documentation.
type (
	// Engine is the interface an engine plugin implements.
	Engine = plugin.Engine
	// NodeBinding is the interface a node binding plugin implements.
	NodeBinding = plugin.NodeBinding
	// Policy is the interface an action policy plugin implements.
	Policy = plugin.Policy
	// DecideRequest describes one attempt before its effects.
	DecideRequest = plugin.DecideRequest
	// Decision is a policy's answer: a verdict and a reason.
	Decision = plugin.Decision
	// Verdict is allow, wait or deny.
	Verdict = plugin.Verdict
	// ActionKind says whether an attempt calls an engine or a binding.
	ActionKind = plugin.ActionKind
	// Description is the answer to Describe.
	Description = plugin.Description
	// Capabilities describes what an engine supports.
	Capabilities = plugin.Capabilities
	// Type names a plugin kind (engine or node).
	Type = plugin.Type
	// Diagnostic is a configuration problem returned by Configure.
	Diagnostic = plugin.Diagnostic
	// Severity is a Diagnostic's severity.
	Severity = plugin.Severity
	// Identity names an engine target.
	Identity = plugin.Identity
	// AdmitRequest asks for a static check of a target.
	AdmitRequest = plugin.AdmitRequest
	// AdmitResponse is the static answer for a target.
	AdmitResponse = plugin.AdmitResponse
	// RunRequest is one engine call.
	RunRequest = plugin.RunRequest
	// Purpose says why a Run is made.
	Purpose = plugin.Purpose
	// Emitter receives streamed events during a Run.
	Emitter = plugin.Emitter
	// RunEvent is one streamed event.
	RunEvent = plugin.RunEvent
	// EventKind names a streamed event.
	EventKind = plugin.EventKind
	// RunResult is the terminal success of a Run.
	RunResult = plugin.RunResult
	// Part is one ordered part of a RunResult.
	Part = plugin.Part
	// PartKind names a result part.
	PartKind = plugin.PartKind
	// Usage is token usage; the zero value is unknown usage.
	Usage = plugin.Usage
	// InvokeRequest is one node binding call.
	InvokeRequest = plugin.InvokeRequest
	// Failure is a typed failure; return it (or wrap it) from a call.
	Failure = plugin.Failure
	// FailureKind classifies a Failure.
	FailureKind = plugin.FailureKind
)

// Plugin types.
const (
	TypeEngine = plugin.TypeEngine
	TypeNode   = plugin.TypeNode
	TypePolicy = plugin.TypePolicy
)

// Verdicts of a policy (docs/policies.md).
const (
	VerdictAllow = plugin.VerdictAllow
	VerdictWait  = plugin.VerdictWait
	VerdictDeny  = plugin.VerdictDeny
)

// Action kinds a policy is asked about.
const (
	ActionEngine  = plugin.ActionEngine
	ActionBinding = plugin.ActionBinding
)

// Failure kinds (docs/writing-plugins.md, docs/architecture.md#the-executor for how the host routes each).
const (
	FailureAuth             = plugin.FailureAuth
	FailureBilling          = plugin.FailureBilling
	FailureMissingCLI       = plugin.FailureMissingCLI
	FailureModelUnavailable = plugin.FailureModelUnavailable
	FailureInvalidConfig    = plugin.FailureInvalidConfig
	FailureQuota            = plugin.FailureQuota
	FailureRateLimit        = plugin.FailureRateLimit
	FailureTransient        = plugin.FailureTransient
	FailureTimeout          = plugin.FailureTimeout
	FailureAborted          = plugin.FailureAborted
	FailureUnknown          = plugin.FailureUnknown
)

// Diagnostic severities.
const (
	SeverityError   = plugin.SeverityError
	SeverityWarning = plugin.SeverityWarning
)

// Run purposes.
const (
	PurposeOrdinary  = plugin.PurposeOrdinary
	PurposePreflight = plugin.PurposePreflight
)

// Streamed event kinds.
const (
	EventText       = plugin.EventText
	EventThinking   = plugin.EventThinking
	EventToolUse    = plugin.EventToolUse
	EventToolResult = plugin.EventToolResult
	EventUsage      = plugin.EventUsage
)

// Result part kinds.
const (
	PartText       = plugin.PartText
	PartThinking   = plugin.PartThinking
	PartToolUse    = plugin.PartToolUse
	PartToolResult = plugin.PartToolResult
	PartStructured = plugin.PartStructured
)
