package plugin

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	pb "github.com/obversa/obversa/plugin/internal/pluginv1"
)

// attemptMessagesSeeds are AttemptMessages as plugins send them: every
// kind of Run stream message, status ends, and a call's messages batched.
func attemptMessagesSeeds() []*pb.AttemptMessages {
	result := &RunResult{
		Parts: []Part{
			{Kind: PartThinking, Text: "t"},
			{Kind: PartToolUse, ToolName: "grep", ToolID: "u1", JSON: json.RawMessage(`{"q":"x"}`)},
			{Kind: PartToolResult, ToolID: "u1", JSON: json.RawMessage(`["a"]`)},
			{Kind: PartStructured, JSON: json.RawMessage(`{"a":[1,2]}`), Final: true},
		},
		Usage:      Usage{Known: true, Input: 1, Output: 2, CacheRead: 3, CacheCreation: 4},
		Requested:  Identity{Adapter: "a", Provider: "p", ModelFamily: "f", Model: "m", Tools: []string{"grep", "ls"}},
		Effective:  Identity{Adapter: "a", Provider: "p", Model: "m2"},
		StopReason: "end_turn",
	}
	msg := func(call uint64, m *pb.RunMessage) *pb.AttemptMessage {
		return &pb.AttemptMessage{Call: call, Message: m}
	}
	ev := func(e RunEvent) *pb.RunMessage {
		m, err := eventToProto(e)
		if err != nil {
			panic(err)
		}
		return m
	}
	final := finalText("done")
	return []*pb.AttemptMessages{
		{},
		{Messages: []*pb.AttemptMessage{{Call: 1}}},
		{Messages: []*pb.AttemptMessage{{Call: 2, StatusCode: 8, StatusMessage: "too big"}}},
		{Messages: []*pb.AttemptMessage{
			msg(3, ev(RunEvent{Kind: EventText, Text: "one "})),
			msg(3, ev(RunEvent{Kind: EventThinking, Text: "hm"})),
			msg(3, ev(RunEvent{Kind: EventText, Text: ""})),
			msg(3, ev(RunEvent{Kind: EventUsage, Usage: Usage{Known: true, Input: 7, Output: 9}})),
			msg(3, &pb.RunMessage{Message: &pb.RunMessage_Result{Result: resultToProto(final)}}),
		}},
		{Messages: []*pb.AttemptMessage{
			msg(4, ev(RunEvent{Kind: EventToolUse, ToolID: "u1", ToolName: "grep", ToolJSON: json.RawMessage(`{"q":1}`)})),
			msg(5, ev(RunEvent{Kind: EventToolResult, ToolID: "u1", ToolJSON: json.RawMessage(`"ok"`)})),
			msg(4, ev(RunEvent{Kind: EventUsage})),
			msg(4, &pb.RunMessage{Message: &pb.RunMessage_Result{Result: resultToProto(result)}}),
			msg(5, &pb.RunMessage{Message: &pb.RunMessage_Failure{Failure: failureToProto(&Failure{
				Kind: FailureRateLimit, Message: "slow down", RetryAfter: 1500 * time.Millisecond, Provider: "p", Model: "m"})}}),
			msg(6, &pb.RunMessage{Message: &pb.RunMessage_Failure{Failure: &pb.Failure{Kind: 99}}}),
			msg(7, &pb.RunMessage{Message: &pb.RunMessage_Result{Result: &pb.RunResult{}}}),
			msg(8, &pb.RunMessage{Message: &pb.RunMessage_ToolUse{ToolUse: &pb.ToolEvent{}}}),
		}},
	}
}

// itemView is an attemptItem as the tests compare it: its error by text.
type itemView struct {
	Call       uint64
	StatusCode uint32
	StatusMsg  string
	Event      *RunEvent
	Result     *RunResult
	Failure    *Failure
	Err        string
}

func viewItems(items []attemptItem) []itemView {
	out := make([]itemView, len(items))
	for i, it := range items {
		out[i] = itemView{Call: it.call, StatusCode: it.statusCode, StatusMsg: it.statusMsg,
			Event: it.msg.event, Result: it.msg.result, Failure: it.msg.failure}
		if it.err != nil {
			out[i].Err = it.err.Error()
		}
	}
	return out
}

// TestReadAttemptMessagesTakesWhatPluginsSend: the direct reader decodes
// every message protobuf's encoder writes for a plugin, as protobuf's
// decoder and the conversions do, without handing it to them.
func TestReadAttemptMessagesTakesWhatPluginsSend(t *testing.T) {
	t.Parallel()
	for i, seed := range attemptMessagesSeeds() {
		b, err := proto.Marshal(seed)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := readAttemptMessages(b)
		if !ok {
			t.Fatalf("seed %d: the direct reader left it to protobuf", i)
		}
		want, err := unmarshalAttemptMessages(b)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(viewItems(want), viewItems(got)); diff != "" {
			t.Errorf("seed %d: direct reader differs (-protobuf +direct):\n%s", i, diff)
		}
	}
}

// outOfRangeUsage are AttemptMessages whose usage counts the conversions
// refuse (above MaxUsageCount): as an event and in a result.
func outOfRangeUsage() []*pb.AttemptMessages {
	big := &pb.Usage{State: &pb.Usage_Reported_{Reported: &pb.Usage_Reported{Input: 1, Output: MaxUsageCount + 1}}}
	return []*pb.AttemptMessages{
		{Messages: []*pb.AttemptMessage{{Call: 1, Message: &pb.RunMessage{Message: &pb.RunMessage_Usage{Usage: big}}}}},
		{Messages: []*pb.AttemptMessage{{Call: 2, Message: &pb.RunMessage{Message: &pb.RunMessage_Result{
			Result: &pb.RunResult{Parts: []*pb.Part{{Kind: pb.PartKind_PART_KIND_TEXT, Text: "x", Final: true}}, Usage: big}}}}}},
	}
}

// TestReadAttemptMessagesRefusesWhatConversionsRefuse: a usage count the
// conversions refuse (above MaxUsageCount, a protocol violation) is
// refused with their error when the direct reader decodes the message: it
// read any count up to an int64's largest, and the event's or result's
// check refused it in other words than the conversions (which
// FuzzDecodeAttemptMessages holds it to).
func TestReadAttemptMessagesRefusesWhatConversionsRefuse(t *testing.T) {
	t.Parallel()
	for i, m := range outOfRangeUsage() {
		b, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		got, err := decodeAttemptMessages(b)
		if err != nil {
			t.Fatal(err)
		}
		want, err := unmarshalAttemptMessages(b)
		if err != nil {
			t.Fatal(err)
		}
		if len(want) != 1 || want[0].err == nil {
			t.Fatalf("case %d: the conversions take a usage count above MaxUsageCount: %+v", i, viewItems(want))
		}
		if diff := cmp.Diff(viewItems(want), viewItems(got)); diff != "" {
			t.Errorf("case %d: decoded otherwise than the conversions decode it (-protobuf +decoded):\n%s", i, diff)
		}
	}
}

// FuzzDecodeAttemptMessages holds the direct reader to protobuf's decoder
// and the conversions: whatever bytes it takes, it decodes to what they
// decode, errors included, and it takes nothing they refuse.
func FuzzDecodeAttemptMessages(f *testing.F) {
	for _, seed := range append(attemptMessagesSeeds(), outOfRangeUsage()...) {
		b, err := proto.Marshal(seed)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, ok := readAttemptMessages(data)
		want, err := unmarshalAttemptMessages(data)
		if !ok {
			return
		}
		if err != nil {
			t.Fatalf("the direct reader took what protobuf refuses: %v", err)
		}
		if diff := cmp.Diff(viewItems(want), viewItems(got)); diff != "" {
			t.Fatalf("direct reader differs (-protobuf +direct):\n%s", diff)
		}
	})
}

// BenchmarkDecodeAttemptMessages decodes the AttemptMessages of one mock
// engine call (three text deltas, usage, the result) the direct way and
// through protobuf's decoder and the conversions.
func BenchmarkDecodeAttemptMessages(b *testing.B) {
	seed := attemptMessagesSeeds()[3]
	raw, err := proto.Marshal(seed)
	if err != nil {
		b.Fatal(err)
	}
	for _, way := range []struct {
		name   string
		decode func([]byte) ([]attemptItem, error)
	}{{"direct", decodeAttemptMessages}, {"protobuf", unmarshalAttemptMessages}} {
		b.Run(way.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := way.decode(raw); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// wireEqual fails t unless got is the wire form protobuf's encoder writes
// for want.
func wireEqual(t *testing.T, what string, got []byte, want proto.Message) {
	t.Helper()
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(want)
	if err != nil {
		t.Fatalf("%s: protobuf refuses it: %v", what, err)
	}
	if !bytes.Equal(got, b) {
		t.Fatalf("%s: written as\n%x\nprotobuf writes\n%x", what, got, b)
	}
}

// checkAppendRunMessage holds the direct writer of Run stream messages and
// AttemptMessages to protobuf's encoder of what the conversions build,
// for every message the inputs make.
func checkAppendRunMessage(t *testing.T, kind uint8, s1, s2 string, js []byte, n1, n2 int64, final bool) {
	t.Helper()
	kinds := []EventKind{EventText, EventThinking, EventToolUse, EventToolResult, EventUsage, "bogus"}
	ev := RunEvent{Kind: kinds[int(kind)%len(kinds)], Text: s1, ToolID: s1, ToolName: s2, ToolJSON: js,
		Usage: Usage{Known: final, Input: n1, Output: n2, CacheRead: n2, CacheCreation: n1}}
	got, err := appendEventMessage(nil, ev)
	want, werr := eventToProto(ev)
	if (err == nil) != (werr == nil) {
		t.Fatalf("event %+v: error %v, eventToProto's %v", ev, err, werr)
	}
	if err == nil {
		wireEqual(t, "event", got, want)
		am, err := attemptEvent(uint64(n1), ev)
		if err != nil {
			t.Fatal(err)
		}
		wireEqual(t, "attempt event", am, &pb.AttemptMessage{Call: uint64(n1), Message: want})
	}
	partKinds := []PartKind{PartText, PartThinking, PartToolUse, PartToolResult, PartStructured, "bogus"}
	res := &RunResult{
		Parts: []Part{
			{Kind: partKinds[int(kind)%len(partKinds)], Text: s1, JSON: js, ToolName: s2, ToolID: s1, Final: final},
			{Kind: PartText, Text: s2, Final: !final},
		},
		Usage:      ev.Usage,
		Requested:  Identity{Adapter: s1, Provider: s2, ModelFamily: s1, Model: s2, Tools: []string{s1, s2}},
		Effective:  Identity{Model: s1},
		StopReason: s2,
	}
	wireEqual(t, "result", appendResultMessage(nil, res), &pb.RunMessage{Message: &pb.RunMessage_Result{Result: resultToProto(res)}})
	failureKinds := append([]FailureKind{"", "bogus"}, FailureKinds...)
	f := &Failure{Kind: failureKinds[int(kind)%len(failureKinds)], Message: s1, RetryAfter: time.Duration(n1), Provider: s2, Model: s1}
	msg := appendFailureMessage(nil, f)
	wireEqual(t, "failure", msg, &pb.RunMessage{Message: &pb.RunMessage_Failure{Failure: failureToProto(f)}})
	var run pb.RunMessage
	if err := proto.Unmarshal(msg, &run); err != nil {
		t.Fatal(err)
	}
	call := uint64(n2)
	am := attemptTerminal(call, 0, func(b []byte) []byte { return appendFailureMessage(b, f) })
	wireEqual(t, "attempt message", am, &pb.AttemptMessage{Call: call, Message: &run})
	wireEqual(t, "attempt status", appendAttemptStatus(nil, call, codes.Code(kind), s1),
		&pb.AttemptMessage{Call: call, StatusCode: uint32(kind), StatusMessage: wireText(s1)})
	batch := []queuedMessage{{call, am}, {call, appendAttemptStatus(nil, call, codes.Internal, s2)}}
	raw, err := proto.Marshal(attemptBatch(batch))
	if err != nil {
		t.Fatal(err)
	}
	wireEqual(t, "batch", raw, &pb.AttemptMessages{Messages: []*pb.AttemptMessage{
		{Call: call, Message: &run}, {Call: call, StatusCode: uint32(codes.Internal), StatusMessage: wireText(s2)}}})
}

// TestAppendRunMessage: the direct writer writes protobuf's bytes for
// every kind of message, short and long, valid UTF-8 or not.
func TestAppendRunMessage(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", 70_000)
	for kind := range uint8(13) {
		checkAppendRunMessage(t, kind, "", "", nil, 0, 0, false)
		checkAppendRunMessage(t, kind, "a", "b\xff", []byte(`{"x":1}`), 5, -1, true)
		checkAppendRunMessage(t, kind, long, strings.Repeat("x", 200), []byte(long), 1<<40, 7, kind%2 == 0)
	}
}

// FuzzAppendRunMessage is TestAppendRunMessage for any inputs.
func FuzzAppendRunMessage(f *testing.F) {
	f.Add(uint8(0), "hello", "", []byte(nil), int64(0), int64(0), false)
	f.Add(uint8(2), "u1", "grep", []byte(`{"q":1}`), int64(3), int64(4), true)
	f.Add(uint8(4), strings.Repeat("y", 300), "\xc3", []byte("[]"), int64(-5), int64(1)<<62, true)
	f.Fuzz(func(t *testing.T, kind uint8, s1, s2 string, js []byte, n1, n2 int64, final bool) {
		checkAppendRunMessage(t, kind, s1, s2, js, n1, n2, final)
	})
}

// attemptRequestSeeds are AttemptRequests as the host sends them.
func attemptRequestSeeds() []*pb.AttemptRequest {
	full := &pb.RunRequest{Purpose: pb.Purpose_PURPOSE_PREFLIGHT, RunId: "r", NodeId: "n", Position: "dag/n/1", AttemptId: "a",
		Target: &pb.Identity{Adapter: "mock", Provider: "local", ModelFamily: "f", Model: "m1", Tools: []string{"grep", ""}},
		Prompt: strings.Repeat("p", 200), OutputSchema: []byte(`{"type":"object"}`), Tools: []string{"ls", "cat"},
		WorkspaceDir: "/w", WorkspaceMode: "read", TimeoutMs: 30_000}
	return []*pb.AttemptRequest{
		{Call: 1, Request: &pb.AttemptRequest_Run{Run: &pb.RunRequest{}}},
		{Call: 2, Request: &pb.AttemptRequest_Run{Run: full}},
		{Call: 3, Request: &pb.AttemptRequest_Run{Run: &pb.RunRequest{Target: &pb.Identity{}, Purpose: -1, TimeoutMs: -2}}},
		{Call: 4, Request: &pb.AttemptRequest_Cancel{Cancel: &pb.AttemptRequest_CancelCall{}}},
	}
}

// TestAttemptRequestWire: the host writes protobuf's bytes for every
// request, and a plugin reads them back by itself, as protobuf does.
func TestAttemptRequestWire(t *testing.T) {
	t.Parallel()
	for i, seed := range attemptRequestSeeds() {
		var b []byte
		switch r := seed.GetRequest().(type) {
		case *pb.AttemptRequest_Run:
			b = appendRunAttempt(nil, seed.GetCall(), r.Run)
		default:
			b = appendCancelAttempt(nil, seed.GetCall())
		}
		wireEqual(t, fmt.Sprintf("request %d", i), b, seed)
		// A negative enum (written as ten bytes) is left to protobuf.
		if _, ok := readAttemptRequest(b); !ok && seed.GetRun().GetPurpose() >= 0 {
			t.Fatalf("request %d: the direct reader left it to protobuf", i)
		}
		got, err := decodeAttemptRequest(b)
		if err != nil {
			t.Fatal(err)
		}
		if !proto.Equal(got, seed) {
			t.Errorf("request %d: read as %v, want %v", i, got, seed)
		}
	}
}

// FuzzAttemptRequestWire holds the host's writer of a Run request and a
// plugin's reader of any bytes to protobuf: the writer writes protobuf's
// bytes, and whatever the reader takes, protobuf decodes to the same
// message.
func FuzzAttemptRequestWire(f *testing.F) {
	for _, seed := range attemptRequestSeeds() {
		b, err := proto.Marshal(seed)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, "s", int64(0))
	}
	f.Fuzz(func(t *testing.T, data []byte, s string, n int64) {
		if got, ok := readAttemptRequest(data); ok {
			var want pb.AttemptRequest
			if err := proto.Unmarshal(data, &want); err != nil {
				t.Fatalf("the direct reader took what protobuf refuses: %v", err)
			}
			if !proto.Equal(got, &want) {
				t.Fatalf("read as %v, protobuf reads %v", got, &want)
			}
		}
		s = wireText(s)
		m := &pb.RunRequest{Purpose: pb.Purpose(n), RunId: s, NodeId: s, Position: s, AttemptId: s, Prompt: s,
			Target: &pb.Identity{Model: s, Tools: []string{s, s}}, OutputSchema: data, Tools: []string{s},
			WorkspaceDir: s, WorkspaceMode: s, TimeoutMs: n}
		wireEqual(t, "run request", appendRunAttempt(nil, uint64(n), m),
			&pb.AttemptRequest{Call: uint64(n), Request: &pb.AttemptRequest_Run{Run: m}})
	})
}
