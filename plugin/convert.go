package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	pb "github.com/obversa/obversa/plugin/internal/pluginv1"
)

// Conversions between the Go types of this package and the generated wire
// types. Functions named ...FromProto validate what a peer sent; the ones
// that can fail return errors that callers wrap with ErrProtocol (host side)
// or turn into InvalidArgument (plugin side).

var failureKindWire = map[FailureKind]pb.FailureKind{
	FailureAuth:             pb.FailureKind_FAILURE_KIND_AUTH,
	FailureBilling:          pb.FailureKind_FAILURE_KIND_BILLING,
	FailureMissingCLI:       pb.FailureKind_FAILURE_KIND_MISSING_CLI,
	FailureModelUnavailable: pb.FailureKind_FAILURE_KIND_MODEL_UNAVAILABLE,
	FailureInvalidConfig:    pb.FailureKind_FAILURE_KIND_INVALID_CONFIG,
	FailureQuota:            pb.FailureKind_FAILURE_KIND_QUOTA,
	FailureRateLimit:        pb.FailureKind_FAILURE_KIND_RATE_LIMIT,
	FailureTransient:        pb.FailureKind_FAILURE_KIND_TRANSIENT,
	FailureTimeout:          pb.FailureKind_FAILURE_KIND_TIMEOUT,
	FailureAborted:          pb.FailureKind_FAILURE_KIND_ABORTED,
	FailureUnknown:          pb.FailureKind_FAILURE_KIND_UNKNOWN,
}

var failureKindGo = invert(failureKindWire)

var typeWire = map[Type]pb.PluginType{
	TypeEngine: pb.PluginType_PLUGIN_TYPE_ENGINE,
	TypeNode:   pb.PluginType_PLUGIN_TYPE_NODE,
	TypePolicy: pb.PluginType_PLUGIN_TYPE_POLICY,
}

var typeGo = invert(typeWire)

var severityWire = map[Severity]pb.Severity{
	SeverityError:   pb.Severity_SEVERITY_ERROR,
	SeverityWarning: pb.Severity_SEVERITY_WARNING,
}

var purposeWire = map[Purpose]pb.Purpose{
	PurposeOrdinary:  pb.Purpose_PURPOSE_ORDINARY,
	PurposePreflight: pb.Purpose_PURPOSE_PREFLIGHT,
}

var purposeGo = invert(purposeWire)

var partKindWire = map[PartKind]pb.PartKind{
	PartText:       pb.PartKind_PART_KIND_TEXT,
	PartThinking:   pb.PartKind_PART_KIND_THINKING,
	PartToolUse:    pb.PartKind_PART_KIND_TOOL_USE,
	PartToolResult: pb.PartKind_PART_KIND_TOOL_RESULT,
	PartStructured: pb.PartKind_PART_KIND_STRUCTURED,
}

var partKindGo = invert(partKindWire)

func invert[K, V comparable](m map[K]V) map[V]K {
	out := make(map[V]K, len(m))
	for k, v := range m {
		out[v] = k
	}
	return out
}

// failureToProto encodes f; an empty or unknown kind becomes UNKNOWN.
func failureToProto(f *Failure) *pb.Failure {
	kind, ok := failureKindWire[f.Kind]
	if !ok {
		kind = pb.FailureKind_FAILURE_KIND_UNKNOWN
	}
	return &pb.Failure{
		Kind:         kind,
		Message:      f.Message,
		RetryAfterMs: durationToMs(f.RetryAfter),
		Provider:     f.Provider,
		Model:        f.Model,
	}
}

// failureFromProto decodes m; kinds this host does not know (newer
// plugins, UNSPECIFIED) become FailureUnknown, which routes conservatively.
func failureFromProto(m *pb.Failure) *Failure {
	kind, ok := failureKindGo[m.GetKind()]
	if !ok {
		kind = FailureUnknown
	}
	return &Failure{
		Kind:       kind,
		Message:    m.GetMessage(),
		RetryAfter: msToDuration(m.GetRetryAfterMs()),
		Provider:   m.GetProvider(),
		Model:      m.GetModel(),
	}
}

// errorToFailure turns an error returned by a plugin implementation into
// the Failure sent to the host: a *Failure in its chain is used as is, a
// context error becomes aborted or timeout, anything else is unknown.
func errorToFailure(err error) *Failure {
	var f *Failure
	switch {
	case errors.As(err, &f):
		out := *f
		if !out.Kind.Valid() {
			out.Kind = FailureUnknown
		}
		return &out
	case errors.Is(err, context.Canceled):
		return &Failure{Kind: FailureAborted, Message: err.Error()}
	case errors.Is(err, context.DeadlineExceeded):
		return &Failure{Kind: FailureTimeout, Message: err.Error()}
	default:
		return &Failure{Kind: FailureUnknown, Message: err.Error()}
	}
}

// durationToMs converts d to whole milliseconds, rounding a positive
// sub-millisecond duration up to 1 so that it never reads as "none".
func durationToMs(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	ms := d.Milliseconds()
	if ms == 0 {
		return 1
	}
	return ms
}

// msToDuration converts milliseconds to a duration; non-positive values are
// 0 and values beyond the range of time.Duration saturate.
func msToDuration(ms int64) time.Duration {
	if ms <= 0 {
		return 0
	}
	if ms > math.MaxInt64/int64(time.Millisecond) {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(ms) * time.Millisecond
}

// rawJSON returns b as a json.RawMessage, nil when empty.
func rawJSON(b []byte) json.RawMessage {
	if len(b) == 0 {
		return nil
	}
	return json.RawMessage(b)
}

func identityToProto(id Identity) *pb.Identity {
	return &pb.Identity{
		Adapter:     id.Adapter,
		Provider:    id.Provider,
		ModelFamily: id.ModelFamily,
		Model:       id.Model,
		Tools:       append([]string(nil), id.Tools...),
	}
}

func identityFromProto(m *pb.Identity) Identity {
	return Identity{
		Adapter:     m.GetAdapter(),
		Provider:    m.GetProvider(),
		ModelFamily: m.GetModelFamily(),
		Model:       m.GetModel(),
		Tools:       append([]string(nil), m.GetTools()...),
	}
}

// usageToProto encodes u; unknown usage is sent as unknown, never as zero
// counts. Negative counts are not representable and arrive as values the
// host rejects.
func usageToProto(u Usage) *pb.Usage {
	if !u.Known {
		return &pb.Usage{State: &pb.Usage_Unknown_{Unknown: &pb.Usage_Unknown{}}}
	}
	return &pb.Usage{State: &pb.Usage_Reported_{Reported: &pb.Usage_Reported{
		Input:         uint64(u.Input),
		Output:        uint64(u.Output),
		CacheRead:     uint64(u.CacheRead),
		CacheCreation: uint64(u.CacheCreation),
	}}}
}

// usageFromProto decodes m; a missing Usage or one with no state set is
// unknown.
func usageFromProto(m *pb.Usage) (Usage, error) {
	r := m.GetReported()
	if r == nil {
		return Usage{}, nil
	}
	counts := []uint64{r.GetInput(), r.GetOutput(), r.GetCacheRead(), r.GetCacheCreation()}
	for _, c := range counts {
		if c > math.MaxInt64 {
			return Usage{}, fmt.Errorf("usage count %d out of range", c)
		}
	}
	return Usage{
		Known:         true,
		Input:         int64(counts[0]),
		Output:        int64(counts[1]),
		CacheRead:     int64(counts[2]),
		CacheCreation: int64(counts[3]),
	}, nil
}

func descriptionToProto(d *Description) *pb.DescribeResponse {
	m := &pb.DescribeResponse{
		Name:    d.Name,
		Version: d.Version,
		Capabilities: &pb.Capabilities{
			Admit:            d.Capabilities.Admit,
			StructuredOutput: d.Capabilities.StructuredOutput,
			Tools:            d.Capabilities.Tools,
			MaxConcurrency:   uint32(min(max(int64(d.Capabilities.MaxConcurrency), 0), math.MaxUint32)),
		},
	}
	for _, t := range d.Types {
		if w, ok := typeWire[t]; ok {
			m.Types = append(m.Types, w)
		}
	}
	for _, k := range d.FailureKinds {
		if w, ok := failureKindWire[k]; ok {
			m.FailureKinds = append(m.FailureKinds, w)
		}
	}
	return m
}

// descriptionFromProto decodes m, dropping plugin types and failure kinds
// this host does not know.
func descriptionFromProto(m *pb.DescribeResponse) *Description {
	d := &Description{
		Name:    m.GetName(),
		Version: m.GetVersion(),
		Capabilities: Capabilities{
			Admit:            m.GetCapabilities().GetAdmit(),
			StructuredOutput: m.GetCapabilities().GetStructuredOutput(),
			Tools:            m.GetCapabilities().GetTools(),
			MaxConcurrency:   int(min(m.GetCapabilities().GetMaxConcurrency(), math.MaxInt32)),
		},
	}
	for _, w := range m.GetTypes() {
		if t, ok := typeGo[w]; ok {
			d.Types = append(d.Types, t)
		}
	}
	for _, w := range m.GetFailureKinds() {
		if k, ok := failureKindGo[w]; ok {
			d.FailureKinds = append(d.FailureKinds, k)
		}
	}
	return d
}

func diagnosticsToProto(ds []Diagnostic) *pb.ConfigureResponse {
	m := &pb.ConfigureResponse{Diagnostics: make([]*pb.Diagnostic, 0, len(ds))}
	for _, d := range ds {
		sev, ok := severityWire[d.Severity]
		if !ok {
			sev = pb.Severity_SEVERITY_ERROR
		}
		m.Diagnostics = append(m.Diagnostics, &pb.Diagnostic{
			Severity:  sev,
			Summary:   d.Summary,
			Detail:    d.Detail,
			Attribute: d.Attribute,
		})
	}
	return m
}

// diagnosticsFromProto decodes m; any severity other than WARNING is an
// error, so that an unknown severity refuses the run rather than passing.
func diagnosticsFromProto(m *pb.ConfigureResponse) []Diagnostic {
	var ds []Diagnostic
	for _, d := range m.GetDiagnostics() {
		sev := SeverityError
		if d.GetSeverity() == pb.Severity_SEVERITY_WARNING {
			sev = SeverityWarning
		}
		ds = append(ds, Diagnostic{
			Severity:  sev,
			Summary:   d.GetSummary(),
			Detail:    d.GetDetail(),
			Attribute: d.GetAttribute(),
		})
	}
	return ds
}

func admitResponseToProto(r *AdmitResponse) *pb.AdmitResponse {
	if !r.Supported {
		return &pb.AdmitResponse{Outcome: &pb.AdmitResponse_Unsupported_{
			Unsupported: &pb.AdmitResponse_Unsupported{Reason: r.Reason},
		}}
	}
	return &pb.AdmitResponse{Outcome: &pb.AdmitResponse_Selection_{
		Selection: &pb.AdmitResponse_Selection{Identity: identityToProto(r.Selection)},
	}}
}

func admitResponseFromProto(m *pb.AdmitResponse) (*AdmitResponse, error) {
	switch o := m.GetOutcome().(type) {
	case *pb.AdmitResponse_Selection_:
		return &AdmitResponse{Supported: true, Selection: identityFromProto(o.Selection.GetIdentity())}, nil
	case *pb.AdmitResponse_Unsupported_:
		return &AdmitResponse{Reason: o.Unsupported.GetReason()}, nil
	default:
		return nil, errors.New("admit response has neither selection nor unsupported")
	}
}

// runRequestToProto encodes req. When req.Timeout is 0 and ctx has a
// deadline, the remaining time is sent instead, so the plugin always learns
// the deadline the context carries.
func runRequestToProto(ctx context.Context, req RunRequest) (*pb.RunRequest, error) {
	purpose := pb.Purpose_PURPOSE_ORDINARY
	if req.Purpose != "" {
		p, ok := purposeWire[req.Purpose]
		if !ok {
			return nil, fmt.Errorf("unknown purpose %q", req.Purpose)
		}
		purpose = p
	}
	return &pb.RunRequest{
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
		TimeoutMs:     durationToMs(effectiveTimeout(ctx, req.Timeout)),
	}, nil
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
		TimeoutMs:    durationToMs(effectiveTimeout(ctx, req.Timeout)),
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

// eventToProto encodes a streamed event; an unknown kind is an error.
func eventToProto(ev RunEvent) (*pb.RunMessage, error) {
	tool := func() *pb.ToolEvent {
		return &pb.ToolEvent{Id: ev.ToolID, Name: ev.ToolName, Json: ev.ToolJSON}
	}
	switch ev.Kind {
	case EventText:
		return &pb.RunMessage{Message: &pb.RunMessage_Text{Text: &pb.Delta{Text: ev.Text}}}, nil
	case EventThinking:
		return &pb.RunMessage{Message: &pb.RunMessage_Thinking{Thinking: &pb.Delta{Text: ev.Text}}}, nil
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
		StopReason: r.StopReason,
	}
	for _, p := range r.Parts {
		m.Parts = append(m.Parts, &pb.Part{
			Kind:     partKindWire[p.Kind], // an unknown kind is sent as UNSPECIFIED and rejected by the host
			Text:     p.Text,
			Json:     p.JSON,
			ToolName: p.ToolName,
			ToolId:   p.ToolID,
			Final:    p.Final,
		})
	}
	return m
}

// resultFromProto decodes and validates a terminal result.
func resultFromProto(m *pb.RunResult) (*RunResult, error) {
	r, err := decodeResult(m, func(i int, k pb.PartKind) (PartKind, error) {
		return "", fmt.Errorf("part %d: unknown kind %d", i, k)
	})
	if err != nil {
		return nil, err
	}
	if err := r.Validate(); err != nil {
		return nil, err
	}
	return r, nil
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
		r, err := resultFromProto(res)
		if err != nil {
			return nil, fmt.Errorf("invalid result: %w", err)
		}
		return r, nil
	})
	if err != nil {
		return runMessage{}, err
	}
	if w.Event != nil {
		// Only a tool event can fail here: the others are valid as decoded.
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
