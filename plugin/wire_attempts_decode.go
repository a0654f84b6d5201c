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

// wireReader walks the fields of one message. A field it cannot take
// (malformed, unknown, of another wire type, seen twice) sets bad.
type wireReader struct {
	b    []byte
	seen uint64 // bit n: field n was read
	bad  bool
}

// next returns the next field's number and wire type; false at the end or
// when the field is malformed.
func (r *wireReader) next() (protowire.Number, protowire.Type, bool) {
	if len(r.b) == 0 || r.bad {
		return 0, 0, false
	}
	num, typ, n := protowire.ConsumeTag(r.b)
	if n < 0 || num >= 64 {
		r.bad = true
		return 0, 0, false
	}
	if r.seen&(1<<num) != 0 {
		r.bad = true // a singular field twice: protobuf merges, the slow way decides
		return 0, 0, false
	}
	r.b = r.b[n:]
	return num, typ, true
}

// once marks field num as read, for a field that may appear only once.
func (r *wireReader) once(num protowire.Number) { r.seen |= 1 << num }

// bytes reads a length-delimited field.
func (r *wireReader) bytes(typ protowire.Type) []byte {
	if typ != protowire.BytesType {
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
func (r *wireReader) str(typ protowire.Type) string {
	v := r.bytes(typ)
	if !utf8.Valid(v) {
		r.bad = true
		return ""
	}
	return string(v)
}

// varint reads a varint field no larger than limit.
func (r *wireReader) varint(typ protowire.Type, limit uint64) uint64 {
	if typ != protowire.VarintType {
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
	r := wireReader{b: b}
	for {
		num, typ, ok := r.next()
		if !ok {
			break
		}
		if num != 1 {
			return nil, false
		}
		item, ok := readAttemptMessage(r.bytes(typ))
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
	for {
		num, typ, ok := r.next()
		if !ok {
			break
		}
		r.once(num)
		switch num {
		case 1:
			item.call = r.varint(typ, math.MaxUint64)
		case 2:
			msg = r.bytes(typ)
		case 3:
			item.statusCode = uint32(r.varint(typ, math.MaxUint32))
		case 4:
			item.statusMsg = r.str(typ)
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
	num, typ, ok := r.next()
	if !ok {
		return WireMessage{Empty: true}, !r.bad
	}
	v := r.bytes(typ)
	if r.bad || len(r.b) != 0 {
		return WireMessage{}, false // a second field of the oneof: the last wins, the slow way decides
	}
	switch num {
	case 1, 2:
		text, ok := readDelta(v)
		kind := EventText
		if num == 2 {
			kind = EventThinking
		}
		return WireMessage{Event: &RunEvent{Kind: kind, Text: text}}, ok
	case 3, 4:
		ev, ok := readToolEvent(v)
		ev.Kind = EventToolUse
		if num == 4 {
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
	for {
		num, typ, ok := r.next()
		if !ok {
			break
		}
		r.once(num)
		if num != 1 {
			return "", false
		}
		text = r.str(typ)
	}
	return text, !r.bad
}

func readToolEvent(b []byte) (RunEvent, bool) {
	r := wireReader{b: b}
	var ev RunEvent
	for {
		num, typ, ok := r.next()
		if !ok {
			break
		}
		r.once(num)
		switch num {
		case 1:
			ev.ToolID = r.str(typ)
		case 2:
			ev.ToolName = r.str(typ)
		case 3:
			ev.ToolJSON = rawJSON(cloneBytes(r.bytes(typ)))
		default:
			return RunEvent{}, false
		}
	}
	return ev, !r.bad
}

// readUsage reads a Usage as usageFromProto decodes it; counts beyond an
// int64, which usageFromProto refuses, are left to it.
func readUsage(b []byte) (Usage, bool) {
	r := wireReader{b: b}
	var u Usage
	num, typ, ok := r.next()
	if !ok {
		return u, !r.bad
	}
	v := r.bytes(typ)
	if r.bad || len(r.b) != 0 {
		return Usage{}, false
	}
	switch num {
	case 1: // unknown: an empty message
		return u, len(v) == 0
	case 2:
	default:
		return Usage{}, false
	}
	r = wireReader{b: v}
	u.Known = true
	for {
		num, typ, ok := r.next()
		if !ok {
			break
		}
		r.once(num)
		n := int64(r.varint(typ, math.MaxInt64))
		switch num {
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
	r := wireReader{b: b}
	res := &RunResult{Parts: make([]Part, 0, 1)}
	for {
		num, typ, ok := r.next()
		if !ok {
			break
		}
		if num != 1 {
			r.once(num) // parts (1) repeat; the rest appear once
		}
		switch num {
		case 1:
			p, ok := readPart(r.bytes(typ))
			if !ok {
				return nil, false
			}
			res.Parts = append(res.Parts, p)
		case 2:
			if res.Usage, ok = readUsage(r.bytes(typ)); !ok {
				return nil, false
			}
		case 3:
			if res.Requested, ok = readIdentity(r.bytes(typ)); !ok {
				return nil, false
			}
		case 4:
			if res.Effective, ok = readIdentity(r.bytes(typ)); !ok {
				return nil, false
			}
		case 5:
			res.StopReason = r.str(typ)
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
	for {
		num, typ, ok := r.next()
		if !ok {
			break
		}
		r.once(num)
		switch num {
		case 1:
			kind = pb.PartKind(r.varint(typ, math.MaxInt32))
		case 2:
			p.Text = r.str(typ)
		case 3:
			p.JSON = rawJSON(cloneBytes(r.bytes(typ)))
		case 4:
			p.ToolName = r.str(typ)
		case 5:
			p.ToolID = r.str(typ)
		case 6:
			p.Final = r.varint(typ, 1) == 1
		default:
			return Part{}, false
		}
	}
	k, ok := partKindGo[kind]
	p.Kind = k
	return p, ok && !r.bad
}

func readIdentity(b []byte) (Identity, bool) {
	r := wireReader{b: b}
	var id Identity
	for {
		num, typ, ok := r.next()
		if !ok {
			break
		}
		if num != 5 {
			r.once(num) // tools (5) repeat; the rest appear once
		}
		switch num {
		case 1:
			id.Adapter = r.str(typ)
		case 2:
			id.Provider = r.str(typ)
		case 3:
			id.ModelFamily = r.str(typ)
		case 4:
			id.Model = r.str(typ)
		case 5:
			id.Tools = append(id.Tools, r.str(typ))
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
	for {
		num, typ, ok := r.next()
		if !ok {
			break
		}
		r.once(num)
		switch num {
		case 1:
			kind = pb.FailureKind(r.varint(typ, math.MaxInt32))
		case 2:
			f.Message = r.str(typ)
		case 3:
			f.RetryAfter = msToDuration(int64(r.varint(typ, math.MaxUint64)))
		case 4:
			f.Provider = r.str(typ)
		case 5:
			f.Model = r.str(typ)
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
