package plugin

import (
	"context"
	"encoding/json"
	"fmt"
)

// ActionKind says what an attempt's effect is.
type ActionKind string

// Action kinds.
const (
	// ActionEngine is an engine call: a prompt sent to a lane target.
	ActionEngine ActionKind = "engine"
	// ActionBinding is a node binding invoked on an input.
	ActionBinding ActionKind = "binding"
)

// Verdict is a policy's answer to Decide.
type Verdict string

// Verdicts (docs/policies.md).
const (
	// VerdictAllow lets the attempt take effect.
	VerdictAllow Verdict = "allow"
	// VerdictWait pauses the position until a person decides (`obversa
	// approve`) or the run is resumed, when the policy is asked again.
	VerdictWait Verdict = "wait"
	// VerdictDeny fails the node DENIED with the reason; it is never
	// retried.
	VerdictDeny Verdict = "deny"
)

// Valid reports whether v is one of the three verdicts.
func (v Verdict) Valid() bool {
	return v == VerdictAllow || v == VerdictWait || v == VerdictDeny
}

// DecideRequest describes one attempt before its effects. Exactly one of
// the engine fields (Lane, Target, Prompt) and the binding fields
// (Binding, Input) is set, as Kind says.
type DecideRequest struct {
	// RunID, NodeID, Position and AttemptID identify the attempt
	// (docs/run-file.md, "Positions").
	RunID     string `json:"run_id"`
	NodeID    string `json:"node_id"`
	Position  string `json:"position"`
	AttemptID string `json:"attempt_id"`
	// Attempt is the n of the position dag/<node>/<n>: 1 for the node's
	// first attempt, 2 for its first retry.
	Attempt int        `json:"attempt"`
	Kind    ActionKind `json:"kind"`
	// NodeKind is the node's kind: required, optional or finalizer.
	NodeKind string `json:"node_kind"`
	// Lane and Target: the lane of an engine action and the target its
	// first call goes to.
	Lane   string   `json:"lane,omitempty"`
	Target Identity `json:"target,omitzero"`
	// Binding is the node plugin of a binding action.
	Binding string `json:"binding,omitempty"`
	// Prompt is an engine action's rendered prompt, after the host's
	// secret checks.
	Prompt string `json:"prompt,omitempty"`
	// Input is a binding action's rendered input as JSON, after the host's
	// secret checks.
	Input json.RawMessage `json:"input,omitempty"`
	// WorkspaceDir is the run's workspace root.
	WorkspaceDir string `json:"workspace_dir,omitempty"`
}

// Decision is a policy's answer: a verdict and, for wait and deny, the
// reason a person reads.
type Decision struct {
	Verdict Verdict `json:"verdict"`
	Reason  string  `json:"reason,omitempty"`
}

// Validate reports whether d is an answer: a known verdict. A reason is
// expected for wait and deny but not required.
func (d *Decision) Validate() error {
	if !d.Verdict.Valid() {
		return fmt.Errorf("verdict %q is not allow, wait or deny", d.Verdict)
	}
	return nil
}

// Policy is an action policy (docs/policies.md): the host asks it, before
// every attempt's effects, whether the attempt may take effect. Every
// method honours ctx; the host bounds Decide by the run's policy timeout.
type Policy interface {
	// Describer: the policy's name and version, and its configuration.
	Describer
	// Decide answers whether the attempt req describes may take effect. An
	// error (typed *Failure or not) makes the host pause the position, as
	// does a Decision that fails Validate: a policy that cannot answer
	// never allows.
	Decide(ctx context.Context, req DecideRequest) (*Decision, error)
}
