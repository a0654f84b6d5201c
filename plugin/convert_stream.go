package plugin

import (
	"fmt"

	pb "github.com/obversa/obversa/plugin/internal/pluginv1"
)

var partKindWire = map[PartKind]pb.PartKind{
	PartText:       pb.PartKind_PART_KIND_TEXT,
	PartThinking:   pb.PartKind_PART_KIND_THINKING,
	PartToolUse:    pb.PartKind_PART_KIND_TOOL_USE,
	PartToolResult: pb.PartKind_PART_KIND_TOOL_RESULT,
	PartStructured: pb.PartKind_PART_KIND_STRUCTURED,
}

var partKindGo = invert(partKindWire)

// eventToProto encodes a streamed event; an unknown kind is an error.
func eventToProto(ev RunEvent) (*pb.RunMessage, error) {
	tool := func() *pb.ToolEvent {
		return &pb.ToolEvent{Id: wireText(ev.ToolID), Name: wireText(ev.ToolName), Json: ev.ToolJSON}
	}
	switch ev.Kind {
	case EventText:
		return &pb.RunMessage{Message: &pb.RunMessage_Text{Text: &pb.Delta{Text: wireText(ev.Text)}}}, nil
	case EventThinking:
		return &pb.RunMessage{Message: &pb.RunMessage_Thinking{Thinking: &pb.Delta{Text: wireText(ev.Text)}}}, nil
	case EventToolUse:
		return &pb.RunMessage{Message: &pb.RunMessage_ToolUse{ToolUse: tool()}}, nil
	case EventToolResult:
		return &pb.RunMessage{Message: &pb.RunMessage_ToolResult{ToolResult: tool()}}, nil
	case EventUsage:
		return &pb.RunMessage{Message: &pb.RunMessage_Usage{Usage: usageToProto(ev.Usage)}}, nil
	default:
		return nil, fmt.Errorf("unknown event kind %q", ev.Kind)
	}
}

func resultToProto(r *RunResult) *pb.RunResult {
	m := &pb.RunResult{
		Parts:      make([]*pb.Part, 0, len(r.Parts)),
		Usage:      usageToProto(r.Usage),
		Requested:  identityToProto(r.Requested),
		Effective:  identityToProto(r.Effective),
		StopReason: wireText(r.StopReason),
	}
	for _, p := range r.Parts {
		m.Parts = append(m.Parts, &pb.Part{
			Kind:     partKindWire[p.Kind], // an unknown kind is sent as UNSPECIFIED and rejected by the host
			Text:     wireText(p.Text),
			Json:     p.JSON,
			ToolName: wireText(p.ToolName),
			ToolId:   wireText(p.ToolID),
			Final:    p.Final,
		})
	}
	return m
}

// decodeResult decodes m without validating it. The kind of part i that
// this host does not know is whatever unknown names it, or the part is
// refused with unknown's error. The other error is usageFromProto's,
// returned as it is.
func decodeResult(m *pb.RunResult, unknown func(i int, k pb.PartKind) (PartKind, error)) (*RunResult, error) {
	usage, err := usageFromProto(m.GetUsage())
	if err != nil {
		return nil, err
	}
	r := &RunResult{
		Parts:      make([]Part, 0, len(m.GetParts())),
		Usage:      usage,
		Requested:  identityFromProto(m.GetRequested()),
		Effective:  identityFromProto(m.GetEffective()),
		StopReason: m.GetStopReason(),
	}
	for i, p := range m.GetParts() {
		kind, ok := partKindGo[p.GetKind()]
		if !ok {
			if kind, err = unknown(i, p.GetKind()); err != nil {
				return nil, err
			}
		}
		r.Parts = append(r.Parts, Part{
			Kind:     kind,
			Text:     p.GetText(),
			JSON:     rawJSON(p.GetJson()),
			ToolName: p.GetToolName(),
			ToolID:   p.GetToolId(),
			Final:    p.GetFinal(),
		})
	}
	return r, nil
}

// runMessage is a decoded Run stream message: exactly one field is set,
// or none for a message this host does not know (ignored).
type runMessage struct {
	event   *RunEvent
	result  *RunResult
	failure *Failure
}

// decodeRunMessage decodes and validates one Run stream message.
func decodeRunMessage(m *pb.RunMessage) (runMessage, error) {
	w, err := decodeWireMessage(m, func(res *pb.RunResult) (*RunResult, error) {
		r, err := decodeResult(res, func(i int, k pb.PartKind) (PartKind, error) {
			return "", fmt.Errorf("part %d: unknown kind %d", i, k)
		})
		if err != nil {
			return nil, fmt.Errorf("invalid result: %w", err)
		}
		return r, nil
	})
	if err != nil {
		return runMessage{}, err
	}
	return checkRunMessage(w)
}

// checkRunMessage validates a decoded Run stream message: its result, or
// its event (only a tool event can fail: the others are valid as decoded).
func checkRunMessage(w WireMessage) (runMessage, error) {
	switch {
	case w.Result != nil:
		if err := w.Result.Validate(); err != nil {
			return runMessage{}, fmt.Errorf("invalid result: %w", err)
		}
	case w.Event != nil:
		if err := w.Event.Validate(); err != nil {
			return runMessage{}, err
		}
	}
	return runMessage{event: w.Event, result: w.Result, failure: w.Failure}, nil
}

// decodeWireMessage decodes m, its result with result; events are not
// validated.
func decodeWireMessage(m *pb.RunMessage, result func(*pb.RunResult) (*RunResult, error)) (WireMessage, error) {
	tool := func(kind EventKind, t *pb.ToolEvent) WireMessage {
		return WireMessage{Event: &RunEvent{Kind: kind, ToolID: t.GetId(), ToolName: t.GetName(), ToolJSON: rawJSON(t.GetJson())}}
	}
	switch msg := m.GetMessage().(type) {
	case *pb.RunMessage_Text:
		return WireMessage{Event: &RunEvent{Kind: EventText, Text: msg.Text.GetText()}}, nil
	case *pb.RunMessage_Thinking:
		return WireMessage{Event: &RunEvent{Kind: EventThinking, Text: msg.Thinking.GetText()}}, nil
	case *pb.RunMessage_ToolUse:
		return tool(EventToolUse, msg.ToolUse), nil
	case *pb.RunMessage_ToolResult:
		return tool(EventToolResult, msg.ToolResult), nil
	case *pb.RunMessage_Usage:
		u, err := usageFromProto(msg.Usage)
		if err != nil {
			return WireMessage{}, fmt.Errorf("usage event: %w", err)
		}
		return WireMessage{Event: &RunEvent{Kind: EventUsage, Usage: u}}, nil
	case *pb.RunMessage_Result:
		r, err := result(msg.Result)
		if err != nil {
			return WireMessage{}, err
		}
		return WireMessage{Result: r}, nil
	case *pb.RunMessage_Failure:
		return WireMessage{Failure: failureFromProto(msg.Failure)}, nil
	default:
		return WireMessage{Empty: true}, nil
	}
}
