package graph

import (
	"encoding/json"
	"time"
)

// Event types recorded by the executor (docs/architecture.md#the-executor). The graph folds the
// ones that change node state; the others are carried for status and audit.
const (
	EventRunStarted       = "graph:run-started"
	EventNodeDispatched   = "graph:node-dispatched"
	EventAttemptStarted   = "graph:node-attempt-started"
	EventEngineAttempt    = "graph:engine-attempt-recorded"
	EventModelUnavailable = "graph:model-unavailable"
	EventNodeCompleted    = "graph:node-completed"
	EventNodeFailed       = "graph:node-failed"
	EventNodePaused       = "graph:node-paused"
	EventNodeResumed      = "graph:node-resumed"
	EventApproval         = "graph:approval-decided"
	EventActionDecided    = "graph:action-decided" // the action policy's answer for a position (docs/policies.md)
	EventRunFinished      = "graph:run-finished"
	EventRunWaiting       = "graph:run-waiting" // the run is paused: see docs/decisions.md, "Vocabulary"
	EventRunResumed       = "graph:run-resumed"

	// Loops and for_each (docs/decisions.md, "Loops and for_each in the
	// record", maps each to the record kind it stands for).
	EventNodeExpanded  = "graph:node-expanded"
	EventLoopStarted   = "graph:loop-started"
	EventRoundStarted  = "graph:loop-round-started"
	EventLoopCondition = "graph:loop-condition"
	EventLoopReviewed  = "graph:loop-reviewed"
	EventLoopFinished  = "graph:loop-finished"
)

// EngineAttemptData is the data of graph:engine-attempt-recorded: one engine
// call of a position, durable before fallback routing or the result is
// used. Requested and Effective are null for a call a crash left
// unfinished. Usage is the call's usage; unknown stays unknown.
type EngineAttemptData struct {
	// The fields are in RFC 8785 member order, as are the JSON values the
	// executor puts in Requested, Effective, Usage and Parts, so that the
	// record keeps the marshalled data as it is instead of sorting its
	// members on every call (store: canonical data).
	Effective   json.RawMessage `json:"effective"`
	FailureKind string          `json:"failure_kind,omitempty"`
	Message     string          `json:"message,omitempty"`
	Node        string          `json:"node"`
	Outcome     string          `json:"outcome"`
	Parts       json.RawMessage `json:"parts,omitempty"`
	// PartsArtifact references the parts when they were too large to keep
	// in the event.
	PartsArtifact *ArtifactRef `json:"parts_artifact,omitempty"`
	Position      string       `json:"position"`
	// Refused is the code the record refused the call's result with
	// (KNOWN_SECRET, RESULT_TOO_LARGE): the record keeps the call and its
	// usage without its parts and message.
	Refused   string          `json:"refused,omitempty"`
	Requested json.RawMessage `json:"requested"`
	Sequence  int             `json:"sequence"`
	Usage     json.RawMessage `json:"usage"`
}

// RetiredTarget names what a lane-dead failure proved dead. Empty fields
// match anything: {adapter, provider} for auth, {provider, model} for
// model_unavailable, billing and quota, {adapter} for missing_cli and
// invalid_config (docs/architecture.md#the-executor).
type RetiredTarget struct {
	Adapter  string `json:"adapter,omitempty"`
	Provider string `json:"provider,omitempty"`
	Model    string `json:"model,omitempty"`
}

// ModelUnavailableData is the data of graph:model-unavailable.
type ModelUnavailableData struct {
	Node        string          `json:"node,omitempty"`
	Position    string          `json:"position,omitempty"`
	FailureKind string          `json:"failure_kind"`
	Retired     []RetiredTarget `json:"retired"`
}

// Dispatch is one node occurrence the graph decided to start. Node is
// the node's id: a for_each instance carries its node's, a loop member
// its own (the loop and round are in the position).
type Dispatch struct {
	Node     string `json:"node"`
	Position string `json:"position"`
}

// DispatchedData is the data of graph:node-dispatched: the decision taken
// at one prefix of the record, or a leading part of it when the whole does
// not fit one event (the rest follows in the next node-dispatched).
type DispatchedData struct {
	Dispatches []Dispatch `json:"dispatches"`
}

// AttemptStartedData is the data of graph:node-attempt-started. It is
// durable before node code runs; RetrySafe is the saved value that governs
// recovery.
type AttemptStartedData struct {
	// In RFC 8785 member order, as EngineAttemptData.
	AttemptID string `json:"attempt_id"`
	Node      string `json:"node"`
	Position  string `json:"position"`
	RetrySafe bool   `json:"retry_safe"`
}

// CompletedData is the data of graph:node-completed. Result holds the
// node's value (engine: the final text as a JSON string or the structured
// value; binding: its output object) unless it was too large for an event,
// in which case ResultArtifact references it.
type CompletedData struct {
	Node           string          `json:"node"`
	Position       string          `json:"position"`
	Result         json.RawMessage `json:"result,omitempty"`
	ResultArtifact *ArtifactRef    `json:"result_artifact,omitempty"`
}

// ArtifactRef mirrors the record's artifact reference.
type ArtifactRef struct {
	Digest    string `json:"digest"`
	Size      int64  `json:"size"`
	MediaType string `json:"media_type"`
	Purpose   string `json:"purpose"`
}

// FailedData is the data of graph:node-failed.
type FailedData struct {
	Node        string `json:"node"`
	Position    string `json:"position"`
	Code        string `json:"code"`
	Message     string `json:"message"`
	FailureKind string `json:"failure_kind,omitempty"`
	// CutOffAt is when the position's attempt was cut off, when that was
	// before the failure was recorded: a run interrupted (no process
	// held it) and ended later (`obversa stop`) records the time the run
	// was last recorded, and the position's elapsed time ends there, not
	// at the stop (docs/decisions.md, "A cut-off attempt ends when the
	// run was interrupted"). Nil otherwise.
	CutOffAt *time.Time `json:"cut_off_at,omitempty"`
}

// Pause request kinds: what a paused position waits for.
const (
	// PauseApproval waits for `obversa approve` (allow or deny).
	PauseApproval = "approval"
	// PauseReconcile waits for a person to say whether an attempt of a
	// node that is not retry_safe took effect after a crash, or the host
	// (a node timeout, a broken-off plugin call) cut it off
	// (`obversa resume --reconciled`; docs/run-file.md, "retry_safe").
	PauseReconcile = "reconcile-attempt"
)

// Approval decisions recorded in graph:approval-decided.
const (
	DecisionAllow = "allow"
	DecisionDeny  = "deny"
)

// Reasons recorded in graph:node-resumed.
const (
	ResumedRetrySafe = "retry-safe" // a crash cut a retry-safe attempt off
	ResumedOperator  = "operator"   // obversa resume --position
	ResumedApproval  = "approval"   // a live worker applied an approval
)

// PauseRequest says what a paused position waits for.
type PauseRequest struct {
	// Kind is PauseApproval or PauseReconcile.
	Kind      string `json:"kind"`
	Position  string `json:"position"`
	AttemptID string `json:"attempt_id,omitempty"`
	// Reason says why, for a person: a policy's reason to wait, why a
	// policy could not answer, or what cut a reconciled attempt off
	// (empty after a crash).
	Reason string `json:"reason,omitempty"`
	// Policy names the policy whose answer paused the position
	// (PolicyApproval for the run file's approval list).
	Policy string `json:"policy,omitempty"`
}

// PausedData is the data of graph:node-paused.
type PausedData struct {
	Node     string       `json:"node"`
	Position string       `json:"position"`
	Request  PauseRequest `json:"request"`
}

// ResumedData is the data of graph:node-resumed: the position is offered
// again (run again, or asked again).
type ResumedData struct {
	Node     string `json:"node"`
	Position string `json:"position"`
	// Reason is ResumedRetrySafe, ResumedOperator or ResumedApproval.
	Reason string `json:"reason"`
}

// ApprovalData is the data of graph:approval-decided. A position takes
// one decision; a second is INVALID_EVENT.
type ApprovalData struct {
	Position string `json:"position"`
	// Decision is DecisionAllow or DecisionDeny.
	Decision string `json:"decision"`
	// Request is the id of the approval request a live worker answered
	// (docs/decisions.md, "One writer"); empty when an operator command
	// recorded the decision itself.
	Request string `json:"request,omitempty"`
}

// Outcome kinds.
const (
	OutcomeComplete = "complete"
	OutcomeFail     = "fail"
	// OutcomePaused: nothing can move until a person answers a paused
	// position.
	OutcomePaused = "paused"
)

// Outcome is the graph's verdict when nothing more can be dispatched.
type Outcome struct {
	// Kind is OutcomeComplete, OutcomeFail or OutcomePaused.
	Kind string `json:"kind"`
	// Code is "DAG_NODE_FAILED" for a failed graph, "" otherwise.
	Code string `json:"code,omitempty"`
	// Failed names the failed or blocked required nodes and failed
	// finalizers, in declaration order.
	Failed []string `json:"failed,omitempty"`
	// Nodes lists the nodes that passed, in declaration order.
	Nodes []string `json:"nodes,omitempty"`
	// Paused lists the paused positions and their requests.
	Paused []PauseRequest `json:"paused,omitempty"`
}

// ExpandedData is the data of graph:node-expanded: the instances of a
// for_each node, decided once its dependencies have passed — in the same
// append as the result that freed it, before any instance is dispatched.
// Keys are the instances' keys in order (a list's order, a map's key
// order); each instance runs at InstancePosition(Node, key, n). When the
// items could not be decided (the source did not render, is not a list of
// strings or an object, repeats a key, or has more than max_items), Keys
// is empty and Code and Message say why: the node fails with that code.
type ExpandedData struct {
	Node    string   `json:"node"`
	Keys    []string `json:"keys"`
	Code    string   `json:"code,omitempty"`
	Message string   `json:"message,omitempty"`
}

// LoopStartedData is the data of graph:loop-started (the record kind
// loop:start): the loop's dependencies have passed and its first round
// follows.
type LoopStartedData struct {
	Loop      string `json:"loop"`
	MaxRounds int    `json:"max_rounds"`
}

// RoundStartedData is the data of graph:loop-round-started (loop:iteration):
// round Round (1-based) of the loop begins; its members run at
// MemberPosition(Loop, Round, member, n).
type RoundStartedData struct {
	Loop  string `json:"loop"`
	Round int    `json:"round"`
}

// ConditionUntil is the only condition a loop checks (ConditionData.Which).
const ConditionUntil = "until"

// ConditionData is the data of graph:loop-condition (loop:condition): the
// loop's until condition, evaluated once the round's members other than
// the review have passed. Met false skips the review and ends the round;
// Error set (the condition did not render to a bool) fails the loop with
// INPUT_RENDER. Reason explains the value for people.
type ConditionData struct {
	Loop   string `json:"loop"`
	Round  int    `json:"round"`
	Which  string `json:"which"`
	Met    bool   `json:"met"`
	Reason string `json:"reason,omitempty"`
	Error  string `json:"error,omitempty"`
}

// Verdict statuses.
const (
	VerdictPass = "pass"
	VerdictFail = "fail"
)

// Finding is one fault a review found: who found it and the evidence.
type Finding struct {
	Reviewer string `json:"reviewer"`
	Evidence string `json:"evidence"`
}

// Revision is what a failed review asks of the next round: why, and the
// findings to fix.
type Revision struct {
	Reason   string    `json:"reason"`
	Findings []Finding `json:"findings"`
}

// ReviewOutcome is a review's judgement: Status VerdictPass or
// VerdictFail, a summary, and for a failure the revision it asks for.
type ReviewOutcome struct {
	Status   string    `json:"status"`
	Summary  string    `json:"summary,omitempty"`
	Revision *Revision `json:"revision,omitempty"`
}

// ReviewedData is the data of graph:loop-reviewed (loop:review): the
// verdict of a round's review member, read from its result (Verdict).
// Accepted reports whether the verdict ends the loop as passed; it is true
// exactly when Outcome.Status is VerdictPass.
type ReviewedData struct {
	Loop     string        `json:"loop"`
	Round    int           `json:"round"`
	Member   string        `json:"member"`
	Position string        `json:"position"`
	Outcome  ReviewOutcome `json:"outcome"`
	Accepted bool          `json:"accepted"`
}

// Loop outcomes (LoopFinishedData.Outcome).
const (
	LoopPassed = "pass"
	LoopFailed = "fail"
)

// LoopFinishedData is the data of graph:loop-finished (loop:end): the
// loop's outcome after Rounds rounds. A failed loop carries the code
// (CodeLoopExhausted, a member's failure code, or INPUT_RENDER for a
// condition that did not render), a message, and the position of the
// member that failed, if one did.
type LoopFinishedData struct {
	Loop     string `json:"loop"`
	Outcome  string `json:"outcome"`
	Rounds   int    `json:"rounds"`
	Code     string `json:"code,omitempty"`
	Message  string `json:"message,omitempty"`
	Position string `json:"position,omitempty"`
}

// Failure codes the graph decides for loops and for_each nodes.
const (
	// CodeLoopExhausted: the loop's last round ended without a passing
	// review.
	CodeLoopExhausted = "LOOP_EXHAUSTED"
	// CodeForEachLimit: a for_each source has more items than max_items.
	CodeForEachLimit = "FOR_EACH_LIMIT"
	// CodeForEachInvalid: a for_each source is not a list of strings or an
	// object, or repeats a key.
	CodeForEachInvalid = "FOR_EACH_INVALID"
	// CodeVerdictInvalid: an engine reviewer's result is not a verdict
	// (Verdict), or a binding reviewer's result has no exit_code.
	CodeVerdictInvalid = "VERDICT_INVALID"
	// CodeInputRender: a template (a prompt, an input, a for_each source,
	// an until condition) did not render.
	CodeInputRender = "INPUT_RENDER"
)
