package plugin

import (
	"fmt"
	"math"

	pb "github.com/obversa/obversa/plugin/internal/pluginv1"
)

var actionKindWire = map[ActionKind]pb.ActionKind{
	ActionEngine:  pb.ActionKind_ACTION_KIND_ENGINE,
	ActionBinding: pb.ActionKind_ACTION_KIND_BINDING,
}

var actionKindGo = invert(actionKindWire)

var verdictWire = map[Verdict]pb.Verdict{
	VerdictAllow: pb.Verdict_VERDICT_ALLOW,
	VerdictWait:  pb.Verdict_VERDICT_WAIT,
	VerdictDeny:  pb.Verdict_VERDICT_DENY,
}

var verdictGo = invert(verdictWire)

// decideRequestToProto encodes req; an unknown action kind or a negative
// attempt is the host's mistake (ErrInvalidRequest).
func decideRequestToProto(req DecideRequest) (*pb.DecideRequest, error) {
	kind, ok := actionKindWire[req.Kind]
	if !ok {
		return nil, fmt.Errorf("action kind %q: %w", req.Kind, ErrInvalidRequest)
	}
	if req.Attempt < 0 || int64(req.Attempt) > math.MaxUint32 {
		return nil, fmt.Errorf("attempt %d: %w", req.Attempt, ErrInvalidRequest)
	}
	m := &pb.DecideRequest{
		RunId: req.RunID, NodeId: req.NodeID, Position: req.Position, AttemptId: req.AttemptID,
		Attempt: uint32(req.Attempt), Kind: kind, NodeKind: req.NodeKind,
		Lane: req.Lane, Binding: req.Binding, Prompt: req.Prompt, InputJson: req.Input,
		WorkspaceDir: req.WorkspaceDir,
	}
	if req.Kind == ActionEngine {
		m.Target = identityToProto(req.Target)
	}
	return m, nil
}

// decideRequestFromProto decodes what the host sent; an unknown action
// kind is an error (the plugin answers InvalidArgument).
func decideRequestFromProto(m *pb.DecideRequest) (DecideRequest, error) {
	kind, ok := actionKindGo[m.GetKind()]
	if !ok {
		return DecideRequest{}, fmt.Errorf("unknown action kind %v", m.GetKind())
	}
	r := DecideRequest{
		RunID: m.GetRunId(), NodeID: m.GetNodeId(), Position: m.GetPosition(), AttemptID: m.GetAttemptId(),
		Attempt: int(m.GetAttempt()), Kind: kind, NodeKind: m.GetNodeKind(),
		Lane: m.GetLane(), Binding: m.GetBinding(), Prompt: m.GetPrompt(), Input: rawJSON(m.GetInputJson()),
		WorkspaceDir: m.GetWorkspaceDir(),
	}
	if m.GetTarget() != nil {
		r.Target = identityFromProto(m.GetTarget())
	}
	return r, nil
}

// decisionToProto encodes d; a verdict this side does not know is sent as
// unspecified, which the host never takes for an allow.
func decisionToProto(d *Decision) *pb.DecideResponse {
	return &pb.DecideResponse{Verdict: verdictWire[d.Verdict], Reason: d.Reason}
}

// decisionFromProto decodes a policy's answer; an unspecified or unknown
// verdict is an error.
func decisionFromProto(m *pb.DecideResponse) (*Decision, error) {
	v, ok := verdictGo[m.GetVerdict()]
	if !ok {
		return nil, fmt.Errorf("verdict %v is not allow, wait or deny", m.GetVerdict())
	}
	return &Decision{Verdict: v, Reason: m.GetReason()}, nil
}
