package plugin

import (
	"math"
	"unicode/utf8"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
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

// wireReader walks the fields of one message: next moves to a field
// (num, typ), whose value one of the readers below takes. A field it
// cannot take (malformed, of another wire type, a field not in repeats
// seen twice) sets bad and ends the walk.
type wireReader struct {
	b       []byte
	repeats uint64 // bit n: field n may appear more than once
	seen    uint64 // bit n: field n was read
	num     protowire.Number
	typ     protowire.Type
	bad     bool
}

// next moves to the next field; false at the end or when the field cannot
// be taken.
func (r *wireReader) next() bool {
	if len(r.b) == 0 || r.bad {
		return false
	}
	num, typ, n := protowire.ConsumeTag(r.b)
	if n < 0 || num >= 64 || r.seen&(1<<num) != 0 {
		// A singular field twice: protobuf merges, the slow way decides.
		r.bad = true
		return false
	}
	if r.repeats&(1<<num) == 0 {
		r.seen |= 1 << num
	}
	r.b, r.num, r.typ = r.b[n:], num, typ
	return true
}

// bytes reads a length-delimited field.
func (r *wireReader) bytes() []byte {
	if r.typ != protowire.BytesType {
		r.bad = true
		return nil
	}
	v, n := protowire.ConsumeBytes(r.b)
	if n < 0 {
		r.bad = true
		return nil
	}
	r.b = r.b[n:]
	return v
}

// str reads a string field, which must be UTF-8 as protobuf requires.
func (r *wireReader) str() string {
	v := r.bytes()
	if !utf8.Valid(v) {
		r.bad = true
		return ""
	}
	return string(v)
}

// varint reads a varint field no larger than limit.
func (r *wireReader) varint(limit uint64) uint64 {
	if r.typ != protowire.VarintType {
		r.bad = true
		return 0
	}
	v, n := protowire.ConsumeVarint(r.b)
	if n < 0 || v > limit {
		r.bad = true
		return 0
	}
	r.b = r.b[n:]
	return v
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

// readUsage reads a Usage as usageFromProto decodes it; counts above
// MaxUsageCount, which usageFromProto refuses, are left to it.
func readUsage(b []byte) (Usage, bool) {
	r := wireReader{b: b}
	var u Usage
	if !r.next() {
		return u, !r.bad
	}
	v := r.bytes()
	if r.bad || len(r.b) != 0 {
		return Usage{}, false
	}
	switch r.num {
	case 1: // unknown: an empty message
		return u, len(v) == 0
	case 2:
	default:
		return Usage{}, false
	}
	r = wireReader{b: v}
	u.Known = true
	for r.next() {
		n := int64(r.varint(MaxUsageCount))
		switch r.num {
		case 1:
			u.Input = n
		case 2:
			u.Output = n
		case 3:
			u.CacheRead = n
		case 4:
			u.CacheCreation = n
		default:
			return Usage{}, false
		}
	}
	return u, !r.bad
}

// readRunResult reads a RunResult as decodeResult decodes it; a part of a
// kind this host does not know is left to it.
func readRunResult(b []byte) (*RunResult, bool) {
	r := wireReader{b: b, repeats: 1 << 1} // parts repeat
	res := &RunResult{Parts: make([]Part, 0, 1)}
	var ok bool
	for r.next() {
		switch r.num {
		case 1:
			var p Part
			if p, ok = readPart(r.bytes()); !ok {
				return nil, false
			}
			res.Parts = append(res.Parts, p)
		case 2:
			if res.Usage, ok = readUsage(r.bytes()); !ok {
				return nil, false
			}
		case 3:
			if res.Requested, ok = readIdentity(r.bytes()); !ok {
				return nil, false
			}
		case 4:
			if res.Effective, ok = readIdentity(r.bytes()); !ok {
				return nil, false
			}
		case 5:
			res.StopReason = r.str()
		default:
			return nil, false
		}
	}
	return res, !r.bad
}

func readPart(b []byte) (Part, bool) {
	r := wireReader{b: b}
	var p Part
	kind := pb.PartKind_PART_KIND_UNSPECIFIED
	for r.next() {
		switch r.num {
		case 1:
			kind = pb.PartKind(r.varint(math.MaxInt32))
		case 2:
			p.Text = r.str()
		case 3:
			p.JSON = rawJSON(cloneBytes(r.bytes()))
		case 4:
			p.ToolName = r.str()
		case 5:
			p.ToolID = r.str()
		case 6:
			p.Final = r.varint(1) == 1
		default:
			return Part{}, false
		}
	}
	k, ok := partKindGo[kind]
	p.Kind = k
	return p, ok && !r.bad
}

func readIdentity(b []byte) (Identity, bool) {
	r := wireReader{b: b, repeats: 1 << 5} // tools repeat
	var id Identity
	for r.next() {
		switch r.num {
		case 1:
			id.Adapter = r.str()
		case 2:
			id.Provider = r.str()
		case 3:
			id.ModelFamily = r.str()
		case 4:
			id.Model = r.str()
		case 5:
			id.Tools = append(id.Tools, r.str())
		default:
			return Identity{}, false
		}
	}
	return id, !r.bad
}

// readFailure reads a Failure as failureFromProto decodes it.
func readFailure(b []byte) (*Failure, bool) {
	r := wireReader{b: b}
	kind := pb.FailureKind_FAILURE_KIND_UNSPECIFIED
	f := &Failure{}
	for r.next() {
		switch r.num {
		case 1:
			kind = pb.FailureKind(r.varint(math.MaxInt32))
		case 2:
			f.Message = r.str()
		case 3:
			f.RetryAfter = msToDuration(int64(r.varint(math.MaxUint64)))
		case 4:
			f.Provider = r.str()
		case 5:
			f.Model = r.str()
		default:
			return nil, false
		}
	}
	if k, ok := failureKindGo[kind]; ok {
		f.Kind = k
	} else {
		f.Kind = FailureUnknown
	}
	return f, !r.bad
}

// cloneBytes copies b, which belongs to gRPC's receive buffer; nil when empty.
func cloneBytes(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return append([]byte(nil), b...)
}
