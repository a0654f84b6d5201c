package plugin

import (
	"encoding/json"
	"testing"

	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	pb "github.com/obversa/obversa/plugin/internal/pluginv1"
)

func runMessageSeeds(f *testing.F) {
	valid := &RunResult{
		Parts: []Part{{Kind: PartThinking, Text: "t"}, {Kind: PartStructured, JSON: json.RawMessage(`{"a":[1,2]}`), Final: true}},
		Usage: Usage{Known: true, Input: 1, Output: 2, CacheRead: 3, CacheCreation: 4},
	}
	msgs := []*pb.RunMessage{
		{},
		{Message: &pb.RunMessage_Result{Result: resultToProto(valid)}},
		{Message: &pb.RunMessage_Result{Result: &pb.RunResult{Parts: []*pb.Part{
			{Kind: pb.PartKind_PART_KIND_TEXT, Final: true}, {Kind: pb.PartKind_PART_KIND_TEXT, Final: true}}}}},
		{Message: &pb.RunMessage_Failure{Failure: failureToProto(&Failure{Kind: FailureRateLimit, RetryAfter: 1e9})}},
		{Message: &pb.RunMessage_ToolUse{ToolUse: &pb.ToolEvent{Id: "1", Name: "n", Json: []byte(`{}`)}}},
		{Message: &pb.RunMessage_Usage{Usage: usageToProto(Usage{})}},
		{Message: &pb.RunMessage_Text{Text: &pb.Delta{Text: "hello"}}},
	}
	for _, m := range msgs {
		b, err := proto.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
}

// FuzzDecodeRunMessage checks that any bytes decoded as a Run stream
// message either fail to decode or give exactly one valid value.
func FuzzDecodeRunMessage(f *testing.F) {
	runMessageSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		var m pb.RunMessage
		if proto.Unmarshal(data, &m) != nil {
			return
		}
		d, err := decodeRunMessage(&m)
		if err != nil {
			return
		}
		set := 0
		if d.event != nil {
			set++
			if err := d.event.Validate(); err != nil {
				t.Fatalf("decoded an invalid event: %v", err)
			}
		}
		if d.result != nil {
			set++
			if err := d.result.Validate(); err != nil {
				t.Fatalf("decoded an invalid result: %v", err)
			}
		}
		if d.failure != nil {
			set++
			if !d.failure.Kind.Valid() || d.failure.RetryAfter < 0 {
				t.Fatalf("decoded an invalid failure: %+v", d.failure)
			}
		}
		if set > 1 {
			t.Fatalf("decoded %d values from one message", set)
		}
		if set == 0 && m.GetMessage() != nil {
			t.Fatalf("message %v decoded to nothing", &m)
		}
	})
}

// FuzzDecodeResult decodes arbitrary bytes as a RunResult.
func FuzzDecodeResult(f *testing.F) {
	b, _ := proto.Marshal(resultToProto(&RunResult{Parts: []Part{{Kind: PartText, Text: "x", Final: true}}}))
	f.Add(b)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		var m pb.RunResult
		if proto.Unmarshal(data, &m) != nil {
			return
		}
		d, err := decodeRunMessage(&pb.RunMessage{Message: &pb.RunMessage_Result{Result: &m}})
		if err != nil {
			return
		}
		r := d.result
		if err := r.Validate(); err != nil {
			t.Fatalf("accepted an invalid result: %v", err)
		}
		if _, ok := r.Final(); !ok {
			t.Fatal("accepted a result without a final part")
		}
	})
}

// FuzzDecodeFailureStatus decodes arbitrary bytes as the google.rpc.Status
// of a unary error and looks for a Failure detail, as the host does.
func FuzzDecodeFailureStatus(f *testing.F) {
	for _, kind := range FailureKinds {
		st, _ := status.FromError(failureStatus(&Failure{Kind: kind, Message: "m", RetryAfter: 1500e6, Provider: "p"}))
		b, err := proto.Marshal(st.Proto())
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	fb, _ := proto.Marshal(&pb.Failure{Kind: 77, RetryAfterMs: -1})
	f.Add(fb)
	f.Fuzz(func(t *testing.T, data []byte) {
		var sp spb.Status
		if proto.Unmarshal(data, &sp) == nil {
			if fl, ok := failureFromStatus(status.FromProto(&sp)); ok && (!fl.Kind.Valid() || fl.RetryAfter < 0) {
				t.Fatalf("invalid failure from status: %+v", fl)
			}
		}
		var m pb.Failure
		if proto.Unmarshal(data, &m) == nil {
			if fl := failureFromProto(&m); !fl.Kind.Valid() || fl.RetryAfter < 0 {
				t.Fatalf("invalid failure: %+v", fl)
			}
		}
	})
}

// FuzzDecodePolicy decodes arbitrary bytes as a policy's answer, as the
// host does, and as a Decide request, as a plugin does: an answer is
// either refused or a valid decision (never an allow made up from a
// verdict the host does not know), and a request that decodes encodes
// back to the same request.
func FuzzDecodePolicy(f *testing.F) {
	for _, d := range []*Decision{{Verdict: VerdictAllow}, {Verdict: VerdictWait, Reason: "r"}, {Verdict: VerdictDeny, Reason: "no"}} {
		b, _ := proto.Marshal(decisionToProto(d))
		f.Add(b)
	}
	req, _ := decideRequestToProto(DecideRequest{RunID: "r", NodeID: "n", Position: "dag/n/1", Attempt: 1, Kind: ActionEngine,
		Target: Identity{Adapter: "a", Provider: "p", Tools: []string{}}, Prompt: "p"})
	b, _ := proto.Marshal(req)
	f.Add(b)
	f.Add([]byte{8, 9})
	f.Fuzz(func(t *testing.T, data []byte) {
		var resp pb.DecideResponse
		if proto.Unmarshal(data, &resp) == nil {
			d, err := decisionFromProto(&resp)
			switch {
			case err == nil && d.Validate() != nil:
				t.Fatalf("accepted an invalid decision %+v", d)
			case err == nil && d.Verdict == VerdictAllow && resp.GetVerdict() != pb.Verdict_VERDICT_ALLOW:
				t.Fatalf("verdict %v read as allow", resp.GetVerdict())
			}
		}
		var m pb.DecideRequest
		if proto.Unmarshal(data, &m) != nil {
			return
		}
		r, err := decideRequestFromProto(&m)
		if err != nil {
			return
		}
		back, err := decideRequestToProto(r)
		if err != nil {
			t.Fatalf("a decoded request does not encode: %+v: %v", r, err)
		}
		r2, err := decideRequestFromProto(back)
		if err != nil || r2.Kind != r.Kind || r2.Attempt != r.Attempt || r2.Prompt != r.Prompt || string(r2.Input) != string(r.Input) {
			t.Fatalf("round trip changed the request: %+v, %v", r2, err)
		}
	})
}

// FuzzAttemptMessage checks that any bytes decoded as a message of an
// Attempts stream either end the call with exactly one of a valid result
// and an error, or hand on at most one valid event and go on.
func FuzzAttemptMessage(f *testing.F) {
	seeds := []*pb.AttemptMessage{
		{Call: 1},
		{Call: 2, StatusCode: 8, StatusMessage: "too big"},
		{Call: 3, StatusCode: 99},
		{Call: 4, Message: &pb.RunMessage{Message: &pb.RunMessage_Text{Text: &pb.Delta{Text: "hi"}}}},
		{Call: 5, Message: &pb.RunMessage{Message: &pb.RunMessage_Result{Result: resultToProto(finalText("done"))}}},
	}
	for _, m := range seeds {
		b, err := proto.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	c := &engineClient{remote: remote{name: "fuzz"}}
	f.Fuzz(func(t *testing.T, data []byte) {
		// The message as the only one of an AttemptMessages.
		items, err := decodeAttemptMessages(protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), data))
		if err != nil {
			return
		}
		if len(items) != 1 {
			t.Fatalf("one message decoded as %d", len(items))
		}
		m := items[0]
		events := 0
		res, done, err := c.attemptMessage(t.Context(), m, func(ev RunEvent) error {
			events++
			if err := ev.Validate(); err != nil {
				t.Fatalf("handed on an invalid event: %v", err)
			}
			return nil
		})
		switch {
		case !done && (res != nil || err != nil):
			t.Fatalf("not done, yet res %v err %v", res, err)
		case done && (res == nil) == (err == nil):
			t.Fatalf("done with res %v and err %v", res, err)
		case res != nil && res.Validate() != nil:
			t.Fatalf("ended with an invalid result: %v", res.Validate())
		case m.statusCode != 0 && err == nil:
			t.Fatalf("status %d did not end the call with an error", m.statusCode)
		case events > 1 || (done && events > 0):
			t.Fatalf("%d events handed on (done %v)", events, done)
		}
	})
}
