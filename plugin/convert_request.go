package plugin

import (
	"context"
	"fmt"
	"time"

	pb "github.com/obversa/obversa/plugin/internal/pluginv1"
)

var purposeWire = map[Purpose]pb.Purpose{
	PurposeOrdinary:  pb.Purpose_PURPOSE_ORDINARY,
	PurposePreflight: pb.Purpose_PURPOSE_PREFLIGHT,
}

var purposeGo = invert(purposeWire)

// runRequestToProto encodes req. When req.Timeout is 0 and ctx has a
// deadline, the remaining time is sent instead, so the plugin always learns
// the deadline the context carries. It refuses a string field that is not
// valid UTF-8 (runRequestUTF8, then invalidUTF8 to name it), which gRPC
// could not encode.
func runRequestToProto(ctx context.Context, req RunRequest) (*pb.RunRequest, error) {
	purpose := pb.Purpose_PURPOSE_ORDINARY
	if req.Purpose != "" {
		p, ok := purposeWire[req.Purpose]
		if !ok {
			return nil, fmt.Errorf("unknown purpose %q", req.Purpose)
		}
		purpose = p
	}
	m := &pb.RunRequest{
		Purpose:       purpose,
		RunId:         req.RunID,
		NodeId:        req.NodeID,
		Position:      req.Position,
		AttemptId:     req.AttemptID,
		Target:        identityToProto(req.Target),
		Prompt:        req.Prompt,
		OutputSchema:  req.OutputSchema,
		Tools:         req.Tools,
		WorkspaceDir:  req.WorkspaceDir,
		WorkspaceMode: req.WorkspaceMode,
		TimeoutMs:     deadlineMs(effectiveTimeout(ctx, req.Timeout)),
	}
	if !runRequestUTF8(m) {
		bad := invalidUTF8(m.ProtoReflect())
		return nil, fmt.Errorf("field %s is not valid UTF-8; gRPC carries only UTF-8 strings (send binary data as a file in the workspace)", bad)
	}
	return m, nil
}

func effectiveTimeout(ctx context.Context, d time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	if dl, ok := ctx.Deadline(); ok {
		return max(time.Until(dl), time.Millisecond)
	}
	return 0
}

// runRequestFromProto decodes m on the plugin side; UNSPECIFIED purpose is
// ordinary.
func runRequestFromProto(m *pb.RunRequest) (RunRequest, error) {
	purpose := PurposeOrdinary
	if m.GetPurpose() != pb.Purpose_PURPOSE_UNSPECIFIED {
		p, ok := purposeGo[m.GetPurpose()]
		if !ok {
			return RunRequest{}, fmt.Errorf("unknown purpose %d", m.GetPurpose())
		}
		purpose = p
	}
	return RunRequest{
		Purpose:       purpose,
		RunID:         m.GetRunId(),
		NodeID:        m.GetNodeId(),
		Position:      m.GetPosition(),
		AttemptID:     m.GetAttemptId(),
		Target:        identityFromProto(m.GetTarget()),
		Prompt:        m.GetPrompt(),
		OutputSchema:  rawJSON(m.GetOutputSchema()),
		Tools:         m.GetTools(),
		WorkspaceDir:  m.GetWorkspaceDir(),
		WorkspaceMode: m.GetWorkspaceMode(),
		Timeout:       msToDuration(m.GetTimeoutMs()),
	}, nil
}

func invokeRequestToProto(ctx context.Context, req InvokeRequest) *pb.InvokeRequest {
	return &pb.InvokeRequest{
		RunId:        req.RunID,
		NodeId:       req.NodeID,
		Position:     req.Position,
		AttemptId:    req.AttemptID,
		InputJson:    req.Input,
		WorkspaceDir: req.WorkspaceDir,
		TimeoutMs:    deadlineMs(effectiveTimeout(ctx, req.Timeout)),
	}
}

func invokeRequestFromProto(m *pb.InvokeRequest) InvokeRequest {
	return InvokeRequest{
		RunID:        m.GetRunId(),
		NodeID:       m.GetNodeId(),
		Position:     m.GetPosition(),
		AttemptID:    m.GetAttemptId(),
		Input:        rawJSON(m.GetInputJson()),
		WorkspaceDir: m.GetWorkspaceDir(),
		Timeout:      msToDuration(m.GetTimeoutMs()),
	}
}
