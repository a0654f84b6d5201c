package plugin

import (
	"math"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	pb "github.com/obversa/obversa/plugin/internal/pluginv1"
)

// The host reads an Attempts stream's AttemptMessages straight from their
// wire bytes into this package's types: protobuf's generic decoder spent
// 13–16 % of the host's CPU per engine call building the generated
// messages that the conversions then copied again (docs/decisions.md,
// "Plugin transport"). The direct reader takes only the form protobuf's
// encoder writes for the messages this host knows — every field once, in
// any order, with its declared wire type, strings in UTF-8, known part
// kinds — and hands anything else (unknown fields, a repeated singular
// field, an invalid string) to proto.Unmarshal and the conversions, which
// decide it as before. FuzzDecodeAttemptMessages holds both ways to the
// same answer.

// attemptItem is one AttemptMessage of a received AttemptMessages,
// decoded as the host handles it.
type attemptItem struct {
	call       uint64
	statusCode uint32
	statusMsg  string
	msg        runMessage
	err        error // the message broke the protocol: decodeRunMessage's error
}

// decodeAttemptMessages decodes b, the wire form of one AttemptMessages.
// The error is the status gRPC gives a message it cannot unmarshal.
func decodeAttemptMessages(b []byte) ([]attemptItem, error) {
	if items, ok := readAttemptMessages(b); ok {
		return items, nil
	}
	return unmarshalAttemptMessages(b)
}

// unmarshalAttemptMessages decodes b with proto.Unmarshal and the
// conversions: decodeAttemptMessages for what readAttemptMessages leaves.
func unmarshalAttemptMessages(b []byte) ([]attemptItem, error) {
	var m pb.AttemptMessages
	if err := proto.Unmarshal(b, &m); err != nil {
		return nil, status.Errorf(codes.Internal, "grpc: failed to unmarshal the received message: %v", err)
	}
	items := make([]attemptItem, len(m.GetMessages()))
	for i, am := range m.GetMessages() {
		items[i] = attemptItem{call: am.GetCall(), statusCode: am.GetStatusCode(), statusMsg: am.GetStatusMessage()}
		items[i].msg, items[i].err = decodeRunMessage(am.GetMessage())
	}
	return items, nil
}

// readAttemptMessages reads b as an AttemptMessages; false when b is not
// in the form the direct reader takes.
func readAttemptMessages(b []byte) ([]attemptItem, bool) {
	items := make([]attemptItem, 0, 8)
	r := wireReader{b: b, repeats: 1 << 1}
	for r.next() {
		if r.num != 1 {
			return nil, false
		}
		item, ok := readAttemptMessage(r.bytes())
		if !ok || r.bad {
			return nil, false
		}
		items = append(items, item)
	}
	return items, !r.bad
}

func readAttemptMessage(b []byte) (attemptItem, bool) {
	var (
		item attemptItem
		msg  []byte
	)
	r := wireReader{b: b}
	for r.next() {
		switch r.num {
		case 1:
			item.call = r.varint(math.MaxUint64)
		case 2:
			msg = r.bytes()
		case 3:
			item.statusCode = uint32(r.varint(math.MaxUint32))
		case 4:
			item.statusMsg = r.str()
		default:
			return attemptItem{}, false
		}
	}
	if r.bad {
		return attemptItem{}, false
	}
	w, ok := readRunMessage(msg)
	if !ok {
		return attemptItem{}, false
	}
	item.msg, item.err = checkRunMessage(w)
	return item, true
}

// readRunMessage reads a RunMessage: one field of its oneof, or none.
func readRunMessage(b []byte) (WireMessage, bool) {
	r := wireReader{b: b}
	if !r.next() {
		return WireMessage{Empty: true}, !r.bad
	}
	v := r.bytes()
	if r.bad || len(r.b) != 0 {
		return WireMessage{}, false // a second field of the oneof: the last wins, the slow way decides
	}
	switch r.num {
	case 1, 2:
		text, ok := readDelta(v)
		kind := EventText
		if r.num == 2 {
			kind = EventThinking
		}
		return WireMessage{Event: &RunEvent{Kind: kind, Text: text}}, ok
	case 3, 4:
		ev, ok := readToolEvent(v)
		ev.Kind = EventToolUse
		if r.num == 4 {
			ev.Kind = EventToolResult
		}
		return WireMessage{Event: &ev}, ok
	case 5:
		u, ok := readUsage(v)
		return WireMessage{Event: &RunEvent{Kind: EventUsage, Usage: u}}, ok
	case 6:
		res, ok := readRunResult(v)
		return WireMessage{Result: res}, ok
	case 7:
		f, ok := readFailure(v)
		return WireMessage{Failure: f}, ok
	}
	return WireMessage{}, false
}

func readDelta(b []byte) (string, bool) {
	r := wireReader{b: b}
	var text string
	for r.next() {
		if r.num != 1 {
			return "", false
		}
		text = r.str()
	}
	return text, !r.bad
}

func readToolEvent(b []byte) (RunEvent, bool) {
	r := wireReader{b: b}
	var ev RunEvent
	for r.next() {
		switch r.num {
		case 1:
			ev.ToolID = r.str()
		case 2:
			ev.ToolName = r.str()
		case 3:
			ev.ToolJSON = rawJSON(cloneBytes(r.bytes()))
		default:
			return RunEvent{}, false
		}
	}
	return ev, !r.bad
}
