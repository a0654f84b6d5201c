package plugin

import (
	"fmt"
	"unicode/utf8"

	"google.golang.org/protobuf/reflect/protoreflect"

	pb "github.com/obversa/obversa/plugin/internal/pluginv1"
)

// runRequestUTF8 reports whether every string field of m is valid UTF-8,
// reading the fields directly: it runs on every call, where the
// reflective walk of invalidUTF8 cost about 3 % of the host's CPU per
// engine call. TestRunRequestUTF8CoversEveryString fails when a string
// field is added to RunRequest (or Identity) and not here.
func runRequestUTF8(m *pb.RunRequest) bool {
	t := m.GetTarget()
	return utf8.ValidString(m.GetRunId()) && utf8.ValidString(m.GetNodeId()) &&
		utf8.ValidString(m.GetPosition()) && utf8.ValidString(m.GetAttemptId()) &&
		utf8.ValidString(m.GetPrompt()) && validStrings(m.GetTools()) &&
		utf8.ValidString(m.GetWorkspaceDir()) && utf8.ValidString(m.GetWorkspaceMode()) &&
		utf8.ValidString(t.GetAdapter()) && utf8.ValidString(t.GetProvider()) &&
		utf8.ValidString(t.GetModelFamily()) && utf8.ValidString(t.GetModel()) &&
		validStrings(t.GetTools())
}

// validStrings reports whether every string of ss is valid UTF-8.
func validStrings(ss []string) bool {
	for _, s := range ss {
		if !utf8.ValidString(s) {
			return false
		}
	}
	return true
}

// invalidUTF8 returns the path of the first string field of m (nested
// messages, lists and maps included) that is not valid UTF-8, or "" when
// every one is. gRPC refuses to encode such a message (proto3 strings are
// UTF-8) and, on a stream, ends the stream with it; the host checks first
// so that the request fails alone (docs/decisions.md, "A request gRPC
// cannot encode fails its own call").
func invalidUTF8(m protoreflect.Message) string {
	var bad string
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		bad = invalidValue(fd, v, string(fd.Name()))
		return bad == ""
	})
	return bad
}

// invalidValue is invalidUTF8 for the value v of field fd, named at path.
func invalidValue(fd protoreflect.FieldDescriptor, v protoreflect.Value, path string) string {
	switch {
	case fd.IsList():
		l := v.List()
		for i := range l.Len() {
			if bad := invalidOne(fd, l.Get(i), fmt.Sprintf("%s[%d]", path, i)); bad != "" {
				return bad
			}
		}
		return ""
	case fd.IsMap():
		var bad string
		v.Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
			if s, ok := k.Interface().(string); ok && !utf8.ValidString(s) {
				bad = path + " (a key)"
				return false
			}
			bad = invalidOne(fd.MapValue(), mv, fmt.Sprintf("%s[%v]", path, k.Interface()))
			return bad == ""
		})
		return bad
	}
	return invalidOne(fd, v, path)
}

// invalidOne checks one string or message value of fd's kind.
func invalidOne(fd protoreflect.FieldDescriptor, v protoreflect.Value, path string) string {
	switch fd.Kind() {
	case protoreflect.StringKind:
		if !utf8.ValidString(v.String()) {
			return path
		}
	case protoreflect.MessageKind, protoreflect.GroupKind:
		if bad := invalidUTF8(v.Message()); bad != "" {
			return path + "." + bad
		}
	}
	return ""
}
