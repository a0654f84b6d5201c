package plugin

import (
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"

	pb "github.com/obversa/obversa/plugin/internal/pluginv1"
)

// TestWireWritersCoverEveryField: the hand-written writers of the
// Attempts stream write every field the protocol has. Each message is
// filled from its descriptor — every field, nested messages and lists
// included, set to a value that is not its zero — and must come out as
// protobuf's encoder writes it: a field added to the protocol and not to
// the writers (the host's RunRequest, a plugin's Run stream messages)
// fails here instead of being dropped on the wire without a word. The
// readers need no such test: a field they do not know is left to
// proto.Unmarshal.
func TestWireWritersCoverEveryField(t *testing.T) {
	t.Parallel()
	req := &pb.RunRequest{}
	fillEvery(req.ProtoReflect())
	wireEqual(t, "run request", appendRunAttempt(nil, 3, req), &pb.AttemptRequest{Call: 3, Request: &pb.AttemptRequest_Run{Run: req}})

	oneof := (&pb.RunMessage{}).ProtoReflect().Descriptor().Oneofs().ByName("message")
	if oneof == nil {
		t.Fatal("RunMessage has no oneof named message")
	}
	for i := range oneof.Fields().Len() {
		fd := oneof.Fields().Get(i)
		m := &pb.RunMessage{}
		fillEvery(m.ProtoReflect().Mutable(fd).Message())
		w, err := decodeWireMessage(m, func(r *pb.RunResult) (*RunResult, error) {
			return decodeResult(r, func(i int, k pb.PartKind) (PartKind, error) {
				t.Fatalf("%s: part %d: kind %d has no Go kind", fd.Name(), i, k)
				return "", nil
			})
		})
		if err != nil {
			t.Fatalf("%s: %v", fd.Name(), err)
		}
		var got []byte
		switch {
		case w.Event != nil:
			if got, err = appendEventMessage(nil, *w.Event); err != nil {
				t.Fatalf("%s: %v", fd.Name(), err)
			}
		case w.Result != nil:
			got = appendResultMessage(nil, w.Result)
		case w.Failure != nil:
			got = appendFailureMessage(nil, w.Failure)
		default:
			t.Fatalf("%s: decoded as no event, result or failure", fd.Name())
		}
		wireEqual(t, string(fd.Name()), got, m)
		am := attemptTerminal(5, 0, func(b []byte) []byte { return append(b, got...) })
		wireEqual(t, string(fd.Name())+" in an AttemptMessage", am, &pb.AttemptMessage{Call: 5, Message: m})
	}
}

// fillEvery sets every field of m, in nested messages and lists too, to a
// value that is not its zero: text for strings, a JSON number for bytes,
// 7 for numbers, true, an enum's first value after 0, and one element in
// each list. Of a oneof, the last field set is kept.
func fillEvery(m protoreflect.Message) {
	fields := m.Descriptor().Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		if fd.IsMap() {
			continue
		}
		if fd.Kind() == protoreflect.MessageKind || fd.Kind() == protoreflect.GroupKind {
			if fd.IsList() {
				l := m.Mutable(fd).List()
				e := l.NewElement()
				fillEvery(e.Message())
				l.Append(e)
			} else {
				fillEvery(m.Mutable(fd).Message())
			}
			continue
		}
		v := scalarValue(fd)
		if fd.IsList() {
			m.Mutable(fd).List().Append(v)
		} else {
			m.Set(fd, v)
		}
	}
}

// scalarValue is fillEvery's value of a field that is not a message.
func scalarValue(fd protoreflect.FieldDescriptor) protoreflect.Value {
	switch fd.Kind() {
	case protoreflect.StringKind:
		return protoreflect.ValueOfString("s-" + string(fd.Name()))
	case protoreflect.BytesKind:
		return protoreflect.ValueOfBytes([]byte("17"))
	case protoreflect.BoolKind:
		return protoreflect.ValueOfBool(true)
	case protoreflect.EnumKind:
		return protoreflect.ValueOfEnum(fd.Enum().Values().Get(1).Number())
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return protoreflect.ValueOfInt32(7)
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return protoreflect.ValueOfInt64(7)
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return protoreflect.ValueOfUint32(7)
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return protoreflect.ValueOfUint64(7)
	case protoreflect.FloatKind:
		return protoreflect.ValueOfFloat32(7)
	case protoreflect.DoubleKind:
		return protoreflect.ValueOfFloat64(7)
	}
	panic("fillEvery: field kind " + fd.Kind().String())
}
