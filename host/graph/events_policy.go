package graph

// Policy verdicts recorded in graph:action-decided (docs/policies.md).
const (
	VerdictAllow = "allow"
	VerdictWait  = "wait"
	VerdictDeny  = "deny"
)

// PolicyApproval names the built-in policy behind the run file's approval
// list: it answers wait for the nodes the list names and allow for the
// others.
const PolicyApproval = "approval"

// PolicyAnswer is one policy's answer in a decision.
type PolicyAnswer struct {
	Policy string `json:"policy"`
	// Digest is "sha256:<hex>" of the policy plugin's pinned binary; empty
	// for the built-in approval policy.
	Digest  string `json:"digest,omitempty"`
	Verdict string `json:"verdict"`
	Reason  string `json:"reason,omitempty"`
	// Error says why the policy gave no answer (it failed, timed out or
	// died, or broke the protocol); the verdict is then wait.
	Error string `json:"error,omitempty"`
}

// ActionDecidedData is the data of graph:action-decided: the action
// policy's decision about one offer of a position, before its effects.
// The policies are asked in order until one does not allow; Verdict,
// Reason, Policy and Digest are that one's answer (the last one asked
// when all allow), Answers every answer. The decision stands for the
// position until a wait is answered by a resume, which asks again.
type ActionDecidedData struct {
	Node     string `json:"node"`
	Position string `json:"position"`
	// Attempt is the n of the position dag/<node>/<n>.
	Attempt int            `json:"attempt"`
	Verdict string         `json:"verdict"`
	Reason  string         `json:"reason,omitempty"`
	Policy  string         `json:"policy"`
	Digest  string         `json:"digest,omitempty"`
	Answers []PolicyAnswer `json:"answers"`
}
