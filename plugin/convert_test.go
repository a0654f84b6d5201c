package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	pb "github.com/obversa/obversa/plugin/internal/pluginv1"
)

func TestFailureConversion(t *testing.T) {
	t.Parallel()
	for _, kind := range FailureKinds {
		f := &Failure{Kind: kind, Message: "m", RetryAfter: 2 * time.Second, Provider: "p", Model: "x"}
		if diff := cmp.Diff(f, failureFromProto(failureToProto(f))); diff != "" {
			t.Errorf("%s round trip (-want +got):\n%s", kind, diff)
		}
	}
	tests := []struct {
		name string
		in   *pb.Failure
		want *Failure
	}{
		{"unspecified kind", &pb.Failure{Message: "m"}, &Failure{Kind: FailureUnknown, Message: "m"}},
		{"kind from the future", &pb.Failure{Kind: 99}, &Failure{Kind: FailureUnknown}},
		{"negative retry", &pb.Failure{Kind: pb.FailureKind_FAILURE_KIND_RATE_LIMIT, RetryAfterMs: -5}, &Failure{Kind: FailureRateLimit}},
		{"huge retry saturates", &pb.Failure{Kind: pb.FailureKind_FAILURE_KIND_RATE_LIMIT, RetryAfterMs: math.MaxInt64}, &Failure{Kind: FailureRateLimit, RetryAfter: math.MaxInt64}},
		{"nil", nil, &Failure{Kind: FailureUnknown}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, failureFromProto(tt.in)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestErrorToFailure(t *testing.T) {
	t.Parallel()
	typed := &Failure{Kind: FailureQuota, Message: "q"}
	tests := []struct {
		name string
		err  error
		want *Failure
	}{
		{"typed", typed, typed},
		{"wrapped typed", fmt.Errorf("ctx: %w", typed), typed},
		{"empty kind", &Failure{Message: "x"}, &Failure{Kind: FailureUnknown, Message: "x"}},
		{"bogus kind", &Failure{Kind: "bogus", Message: "x"}, &Failure{Kind: FailureUnknown, Message: "x"}},
		{"canceled", fmt.Errorf("run: %w", context.Canceled), &Failure{Kind: FailureAborted, Message: "run: context canceled"}},
		{"deadline", context.DeadlineExceeded, &Failure{Kind: FailureTimeout, Message: "context deadline exceeded"}},
		{"plain", errors.New("boom"), &Failure{Kind: FailureUnknown, Message: "boom"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, errorToFailure(tt.err)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestUsageConversion(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		in      *pb.Usage
		want    Usage
		wantErr bool
	}{
		{"missing is unknown", nil, Usage{}, false},
		{"empty is unknown", &pb.Usage{}, Usage{}, false},
		{"unknown", usageToProto(Usage{}), Usage{}, false},
		{"reported zero is known", usageToProto(Usage{Known: true}), Usage{Known: true}, false},
		{"reported", usageToProto(Usage{Known: true, Input: 1, Output: 2, CacheRead: 3, CacheCreation: 4}),
			Usage{Known: true, Input: 1, Output: 2, CacheRead: 3, CacheCreation: 4}, false},
		{"overflow", &pb.Usage{State: &pb.Usage_Reported_{Reported: &pb.Usage_Reported{Output: math.MaxUint64}}}, Usage{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := usageFromProto(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	// Unknown usage is never sent as zero counts.
	if usageToProto(Usage{}).GetReported() != nil {
		t.Error("unknown usage encoded as reported")
	}
}

func TestDescriptionAndDiagnosticsConversion(t *testing.T) {
	t.Parallel()
	d := &Description{
		Name: "n", Version: "v", Types: []Type{TypeEngine, TypeNode},
		Capabilities: Capabilities{Admit: true, StructuredOutput: true, Tools: true, MaxConcurrency: 8},
		FailureKinds: FailureKinds,
	}
	if diff := cmp.Diff(d, descriptionFromProto(descriptionToProto(d))); diff != "" {
		t.Errorf("description (-want +got):\n%s", diff)
	}
	unknown := &pb.DescribeResponse{Types: []pb.PluginType{0, 7, pb.PluginType_PLUGIN_TYPE_NODE}, FailureKinds: []pb.FailureKind{42}}
	if diff := cmp.Diff(&Description{Types: []Type{TypeNode}}, descriptionFromProto(unknown)); diff != "" {
		t.Errorf("unknown enum values (-want +got):\n%s", diff)
	}

	ds := []Diagnostic{{Severity: SeverityWarning, Summary: "s", Detail: "d", Attribute: "a"}, {Severity: SeverityError, Summary: "e"}}
	if diff := cmp.Diff(ds, diagnosticsFromProto(diagnosticsToProto(ds))); diff != "" {
		t.Errorf("diagnostics (-want +got):\n%s", diff)
	}
	odd := &pb.ConfigureResponse{Diagnostics: []*pb.Diagnostic{{Summary: "unspecified"}, {Severity: 9, Summary: "future"}}}
	want := []Diagnostic{{Severity: SeverityError, Summary: "unspecified"}, {Severity: SeverityError, Summary: "future"}}
	if diff := cmp.Diff(want, diagnosticsFromProto(odd)); diff != "" {
		t.Errorf("unknown severities must refuse (-want +got):\n%s", diff)
	}
}

func TestRunRequestConversion(t *testing.T) {
	t.Parallel()
	req := RunRequest{
		Purpose: PurposePreflight, RunID: "r", NodeID: "n", Position: "dag/n/1", AttemptID: "a",
		Target: Identity{Adapter: "x", Tools: []string{"t"}}, Prompt: "p",
		OutputSchema: json.RawMessage(`{}`), Tools: []string{"t"}, WorkspaceDir: "/w", WorkspaceMode: "git",
		Timeout: 1500 * time.Millisecond,
	}
	m, err := runRequestToProto(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	got, err := runRequestFromProto(m)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(req, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}

	if _, err := runRequestToProto(context.Background(), RunRequest{Purpose: "probe"}); err == nil {
		t.Error("unknown purpose accepted")
	}
	if m, _ := runRequestToProto(context.Background(), RunRequest{Timeout: time.Microsecond}); m.GetTimeoutMs() != 1 {
		t.Errorf("sub-millisecond timeout sent as %d ms, want 1", m.GetTimeoutMs())
	}
	// The plugin counts timeout_ms from when the call arrives: rounded
	// down, its deadline could pass before the host's.
	for _, d := range []time.Duration{1500*time.Millisecond + time.Microsecond, 299*time.Millisecond + 999*time.Microsecond} {
		want := d.Milliseconds() + 1
		if m, _ := runRequestToProto(context.Background(), RunRequest{Timeout: d}); m.GetTimeoutMs() != want {
			t.Errorf("timeout %s sent as %d ms, want %d (rounded up)", d, m.GetTimeoutMs(), want)
		}
		if m := invokeRequestToProto(context.Background(), InvokeRequest{Timeout: d}); m.GetTimeoutMs() != want {
			t.Errorf("invoke timeout %s sent as %d ms, want %d (rounded up)", d, m.GetTimeoutMs(), want)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	if m, _ := runRequestToProto(ctx, RunRequest{}); msToDuration(m.GetTimeoutMs()) < time.Until(func() time.Time { d, _ := ctx.Deadline(); return d }()) {
		t.Errorf("the context's deadline sent as %d ms, short of the time left", m.GetTimeoutMs())
	}
	if r, err := runRequestFromProto(&pb.RunRequest{}); err != nil || r.Purpose != PurposeOrdinary {
		t.Errorf("unspecified purpose = %q, %v; want ordinary", r.Purpose, err)
	}
	if _, err := runRequestFromProto(&pb.RunRequest{Purpose: 5}); err == nil {
		t.Error("purpose from the future accepted")
	}
}

func TestRunMessageDecoding(t *testing.T) {
	t.Parallel()
	result := &RunResult{
		Parts: []Part{{Kind: PartToolResult, ToolID: "1", JSON: json.RawMessage(`[1]`)}, {Kind: PartText, Text: "hi", Final: true}},
		Usage: Usage{Known: true, Output: 5}, Requested: Identity{Model: "a"}, Effective: Identity{Model: "b"}, StopReason: "end",
	}
	tests := []struct {
		name    string
		in      *pb.RunMessage
		want    runMessage
		wantErr string
	}{
		{"empty message is ignored", &pb.RunMessage{}, runMessage{}, ""},
		{"result", &pb.RunMessage{Message: &pb.RunMessage_Result{Result: resultToProto(result)}}, runMessage{result: result}, ""},
		{"failure", &pb.RunMessage{Message: &pb.RunMessage_Failure{Failure: &pb.Failure{Kind: pb.FailureKind_FAILURE_KIND_AUTH}}},
			runMessage{failure: &Failure{Kind: FailureAuth}}, ""},
		{"invalid result", &pb.RunMessage{Message: &pb.RunMessage_Result{Result: &pb.RunResult{}}}, runMessage{}, "0 final parts"},
		{"unknown part kind", &pb.RunMessage{Message: &pb.RunMessage_Result{Result: &pb.RunResult{Parts: []*pb.Part{{Kind: 0, Final: true}}}}},
			runMessage{}, "unknown kind 0"},
		{"bad tool JSON", &pb.RunMessage{Message: &pb.RunMessage_ToolUse{ToolUse: &pb.ToolEvent{Json: []byte("{")}}}, runMessage{}, "not valid JSON"},
		{"usage overflow", &pb.RunMessage{Message: &pb.RunMessage_Usage{Usage: &pb.Usage{State: &pb.Usage_Reported_{
			Reported: &pb.Usage_Reported{Input: math.MaxUint64}}}}}, runMessage{}, "usage count input is 18446744073709551615, which is -1 read as a signed 64-bit number: a negative count"},
		{"negative usage sent as unsigned", &pb.RunMessage{Message: &pb.RunMessage_Usage{Usage: &pb.Usage{State: &pb.Usage_Reported_{
			Reported: &pb.Usage_Reported{CacheCreation: uint64(1<<64 - 5)}}}}}, runMessage{}, "usage count cache_creation is 18446744073709551611, which is -5 read as"},
		{"usage the record cannot hold exactly", &pb.RunMessage{Message: &pb.RunMessage_Usage{Usage: &pb.Usage{State: &pb.Usage_Reported_{
			Reported: &pb.Usage_Reported{CacheRead: 1 << 53}}}}}, runMessage{}, "usage count cache_read is 9007199254740992, out of range"},
		{"result usage the record cannot hold exactly", &pb.RunMessage{Message: &pb.RunMessage_Result{Result: &pb.RunResult{
			Parts: []*pb.Part{{Kind: pb.PartKind_PART_KIND_TEXT, Text: "a", Final: true}},
			Usage: &pb.Usage{State: &pb.Usage_Reported_{Reported: &pb.Usage_Reported{Output: math.MaxInt64}}}}}}, runMessage{}, "usage count output is 9223372036854775807, out of range"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := decodeRunMessage(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(runMessage{})); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	for _, ev := range []RunEvent{
		{Kind: EventText, Text: "a"}, {Kind: EventThinking, Text: "b"},
		{Kind: EventToolUse, ToolName: "n", ToolID: "i", ToolJSON: json.RawMessage(`{}`)},
		{Kind: EventToolResult, ToolName: "n", ToolID: "i"},
		{Kind: EventUsage, Usage: Usage{Known: true, CacheRead: 7}}, {Kind: EventUsage},
	} {
		m, err := eventToProto(ev)
		if err != nil {
			t.Fatal(err)
		}
		got, err := decodeRunMessage(m)
		if err != nil || got.event == nil {
			t.Fatalf("%s: %+v, %v", ev.Kind, got, err)
		}
		if diff := cmp.Diff(ev, *got.event); diff != "" {
			t.Errorf("%s event round trip (-want +got):\n%s", ev.Kind, diff)
		}
	}
	if _, err := eventToProto(RunEvent{Kind: "image"}); err == nil {
		t.Error("unknown event kind encoded")
	}
}

func TestAdmitResponseConversion(t *testing.T) {
	t.Parallel()
	for _, r := range []*AdmitResponse{
		{Supported: true, Selection: Identity{Adapter: "a", Provider: "p", ModelFamily: "f", Model: "m", Tools: []string{"x"}}},
		{Reason: "cannot tell"},
	} {
		got, err := admitResponseFromProto(admitResponseToProto(r))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(r, got); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	}
	if _, err := admitResponseFromProto(&pb.AdmitResponse{}); err == nil {
		t.Error("admit response without outcome accepted")
	}
}
