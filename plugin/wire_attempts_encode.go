package plugin

import (
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/emptypb"

	pb "github.com/obversa/obversa/plugin/internal/pluginv1"
)

// A Go plugin writes the messages of its Attempts stream straight from this
// package's types into their wire form, the bytes protobuf's encoder writes
// for the generated messages (FuzzAppendRunMessage holds them equal):
// building the generated messages, sizing them for the limit and again for
// gRPC, and encoding them through protobuf's reflection were 15 % of the mock
// engine's CPU per call (docs/decisions.md, "Plugin transport"). Each
// message is encoded in the call's goroutine as it is emitted; the sender
// joins a batch's messages into one AttemptMessages and hands gRPC the
// bytes as the unknown fields of an empty message, which protobuf writes
// as they are.

// appendEventMessage appends the RunMessage of ev, as eventToProto builds
// it; an unknown kind is an error.
func appendEventMessage(b []byte, ev RunEvent) ([]byte, error) {
	switch ev.Kind {
	case EventText, EventThinking:
		num := protowire.Number(1)
		if ev.Kind == EventThinking {
			num = 2
		}
		return appendNested(b, num, func(b []byte) []byte { return appendString(b, 1, wireText(ev.Text)) }), nil
	case EventToolUse, EventToolResult:
		num := protowire.Number(3)
		if ev.Kind == EventToolResult {
			num = 4
		}
		return appendNested(b, num, func(b []byte) []byte {
			b = appendString(b, 1, wireText(ev.ToolID))
			b = appendString(b, 2, wireText(ev.ToolName))
			return appendBytes(b, 3, ev.ToolJSON)
		}), nil
	case EventUsage:
		return appendNested(b, 5, func(b []byte) []byte { return appendUsage(b, ev.Usage) }), nil
	default:
		return b, fmt.Errorf("unknown event kind %q", ev.Kind)
	}
}

// appendResultMessage appends the RunMessage of a terminal result, as
// resultToProto builds it.
func appendResultMessage(b []byte, r *RunResult) []byte {
	return appendNested(b, 6, func(b []byte) []byte {
		for _, p := range r.Parts {
			b = appendNested(b, 1, func(b []byte) []byte {
				// An unknown kind is sent as UNSPECIFIED (0, left out) and
				// rejected by the host.
				b = appendVarint(b, 1, uint64(partKindWire[p.Kind]))
				b = appendString(b, 2, wireText(p.Text))
				b = appendBytes(b, 3, p.JSON)
				b = appendString(b, 4, wireText(p.ToolName))
				b = appendString(b, 5, wireText(p.ToolID))
				if p.Final {
					b = appendVarint(b, 6, 1)
				}
				return b
			})
		}
		b = appendNested(b, 2, func(b []byte) []byte { return appendUsage(b, r.Usage) })
		b = appendNested(b, 3, func(b []byte) []byte { return appendIdentity(b, r.Requested) })
		b = appendNested(b, 4, func(b []byte) []byte { return appendIdentity(b, r.Effective) })
		return appendString(b, 5, wireText(r.StopReason))
	})
}

// appendFailureMessage appends the RunMessage of a terminal failure, as
// failureToProto builds it.
func appendFailureMessage(b []byte, f *Failure) []byte {
	return appendNested(b, 7, func(b []byte) []byte {
		kind, ok := failureKindWire[f.Kind]
		if !ok {
			kind = pb.FailureKind_FAILURE_KIND_UNKNOWN
		}
		b = appendVarint(b, 1, uint64(kind))
		b = appendString(b, 2, wireText(f.Message))
		b = appendVarint(b, 3, uint64(durationToMs(f.RetryAfter)))
		b = appendString(b, 4, wireText(f.Provider))
		return appendString(b, 5, wireText(f.Model))
	})
}

// appendUsage appends the fields of a Usage, as usageToProto builds it.
func appendUsage(b []byte, u Usage) []byte {
	if !u.Known {
		return appendNested(b, 1, func(b []byte) []byte { return b })
	}
	return appendNested(b, 2, func(b []byte) []byte {
		b = appendVarint(b, 1, uint64(u.Input))
		b = appendVarint(b, 2, uint64(u.Output))
		b = appendVarint(b, 3, uint64(u.CacheRead))
		return appendVarint(b, 4, uint64(u.CacheCreation))
	})
}

// appendIdentity appends the fields of an Identity, as identityToProto
// builds it.
func appendIdentity(b []byte, id Identity) []byte {
	b = appendString(b, 1, wireText(id.Adapter))
	b = appendString(b, 2, wireText(id.Provider))
	b = appendString(b, 3, wireText(id.ModelFamily))
	b = appendString(b, 4, wireText(id.Model))
	for _, t := range id.Tools {
		b = protowire.AppendTag(b, 5, protowire.BytesType)
		b = protowire.AppendString(b, wireText(t))
	}
	return b
}

// attemptEvent is the AttemptMessage of call id carrying ev, written into
// one buffer of about its size; an unknown kind is an error.
func attemptEvent(id uint64, ev RunEvent) ([]byte, error) {
	var err error
	b := appendVarint(make([]byte, 0, eventSize(ev)+16), 1, id)
	b = appendNested(b, 2, func(b []byte) []byte {
		b, err = appendEventMessage(b, ev)
		return b
	})
	return b, err
}

// attemptTerminal is the AttemptMessage of call id carrying msg, the
// RunMessage that msg appends, written into a buffer of hint bytes.
func attemptTerminal(id uint64, hint int, msg func([]byte) []byte) []byte {
	b := appendVarint(make([]byte, 0, hint+16), 1, id)
	return appendNested(b, 2, msg)
}

// eventSize is about the size of ev's RunMessage.
func eventSize(ev RunEvent) int {
	return 24 + len(ev.Text) + len(ev.ToolID) + len(ev.ToolName) + len(ev.ToolJSON)
}

// terminalSize is about the size of the terminal RunMessage of res (nil
// for a failure).
func terminalSize(res *RunResult) int {
	if res == nil {
		return 128
	}
	n := 160 + len(res.StopReason)
	for _, p := range res.Parts {
		n += 24 + len(p.Text) + len(p.JSON) + len(p.ToolName) + len(p.ToolID)
	}
	for _, id := range []Identity{res.Requested, res.Effective} {
		for _, t := range id.Tools {
			n += 2 + len(t)
		}
	}
	return n
}

// appendAttemptStatus appends an AttemptMessage that ends call id with a
// gRPC status.
func appendAttemptStatus(b []byte, id uint64, code codes.Code, msg string) []byte {
	b = appendVarint(b, 1, id)
	b = appendVarint(b, 3, uint64(code))
	return appendString(b, 4, wireText(msg))
}

// attemptBatch is the AttemptMessages holding msgs as gRPC sends it.
func attemptBatch(msgs []queuedMessage) *emptypb.Empty {
	n := 0
	for _, m := range msgs {
		n += batchEntrySize(m.wire)
	}
	b := make([]byte, 0, n)
	for _, m := range msgs {
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		b = protowire.AppendBytes(b, m.wire)
	}
	return rawMessage(b)
}

// rawMessage is a message whose wire form is b: an empty message with b
// as its unknown fields, which protobuf's encoder writes as they are.
func rawMessage(b []byte) *emptypb.Empty {
	e := &emptypb.Empty{}
	e.ProtoReflect().SetUnknown(protoreflect.RawFields(b))
	return e
}

// batchEntrySize is the size m, an AttemptMessage, adds to an
// AttemptMessages.
func batchEntrySize(m []byte) int {
	return protowire.SizeTag(1) + protowire.SizeBytes(len(m))
}

// appendNested appends field num holding the message content appends,
// its length written in front once known.
func appendNested(b []byte, num protowire.Number, content func([]byte) []byte) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	at := len(b)
	b = append(b, 0) // room for a length below 128, the usual case
	b = content(b)
	n := len(b) - at - 1
	if n < 0x80 {
		b[at] = byte(n)
		return b
	}
	k := protowire.SizeVarint(uint64(n))
	b = append(b, make([]byte, k-1)...)
	copy(b[at+k:], b[at+1:at+1+n])
	protowire.AppendVarint(b[:at], uint64(n))
	return b
}

// appendString appends string field num unless s is empty (proto3 leaves
// empty strings out).
func appendString(b []byte, num protowire.Number, s string) []byte {
	if s == "" {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendString(b, s)
}

// appendBytes appends bytes field num unless v is empty.
func appendBytes(b []byte, num protowire.Number, v []byte) []byte {
	if len(v) == 0 {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendBytes(b, v)
}

// appendVarint appends varint field num unless v is 0.
func appendVarint(b []byte, num protowire.Number, v uint64) []byte {
	if v == 0 {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.VarintType)
	return protowire.AppendVarint(b, v)
}
