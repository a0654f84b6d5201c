package plugin

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"

	pb "github.com/obversa/obversa/plugin/internal/pluginv1"
)

// TestRunRequestUTF8CoversEveryString sets each string of a RunRequest
// (nested messages and lists included, found from the descriptor) to
// bytes that are not UTF-8 in turn: runRequestUTF8 must refuse each, so a
// string field added to the protocol and not to its list fails here, and
// invalidUTF8 must name it.
func TestRunRequestUTF8CoversEveryString(t *testing.T) {
	t.Parallel()
	paths := stringPaths(pb.File_obversa_plugin_v1_plugin_proto.Messages().ByName("RunRequest"), "")
	if len(paths) < 10 {
		t.Fatalf("found %d string fields in RunRequest, expected at least 10: %v", len(paths), paths)
	}
	if m := filledRunRequest(""); !runRequestUTF8(m) {
		t.Fatal("runRequestUTF8 refuses a request whose strings are all valid")
	}
	for _, path := range paths {
		m := filledRunRequest(path)
		if runRequestUTF8(m) {
			t.Errorf("runRequestUTF8 accepts a request whose %s is not UTF-8", path)
		}
		if got := invalidUTF8(m.ProtoReflect()); got != path {
			t.Errorf("invalidUTF8 names %q, want %q", got, path)
		}
	}
}

// stringPaths lists the paths of md's string fields as invalidUTF8 names
// them, a list's first element standing for the list.
func stringPaths(md protoreflect.MessageDescriptor, prefix string) []string {
	var out []string
	fields := md.Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		path := prefix + string(fd.Name())
		if fd.IsList() {
			path += "[0]"
		}
		switch fd.Kind() {
		case protoreflect.StringKind:
			out = append(out, path)
		case protoreflect.MessageKind:
			out = append(out, stringPaths(fd.Message(), path+".")...)
		}
	}
	return out
}

// filledRunRequest is a RunRequest with every string field (and one
// element of every list of strings) set, the one at bad to bytes that are
// not UTF-8 and the others to valid text.
func filledRunRequest(bad string) *pb.RunRequest {
	m := &pb.RunRequest{}
	fill(m.ProtoReflect(), "", bad)
	return m
}

func fill(m protoreflect.Message, prefix, bad string) {
	fields := m.Descriptor().Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		path := prefix + string(fd.Name())
		if fd.IsList() {
			path += "[0]"
		}
		text := "ok"
		if path == bad {
			text = "\xff"
		}
		switch {
		case fd.Kind() == protoreflect.StringKind && fd.IsList():
			m.Mutable(fd).List().Append(protoreflect.ValueOfString(text))
		case fd.Kind() == protoreflect.StringKind:
			m.Set(fd, protoreflect.ValueOfString(text))
		case fd.Kind() == protoreflect.MessageKind && !fd.IsList() && !fd.IsMap():
			fill(m.Mutable(fd).Message(), path+".", bad)
		}
	}
}

// BenchmarkRunRequestUTF8 times the UTF-8 check of a chain node's
// request both ways: reading its fields directly (runRequestUTF8, on
// every call) and walking the message by reflection (invalidUTF8, now
// only to name the field of a request refused); docs/decisions.md,
// "Plugin transport", quotes it.
func BenchmarkRunRequestUTF8(b *testing.B) {
	req := RunRequest{RunID: "r1", NodeID: "n17", Position: "dag/n17/1", AttemptID: "sha256:" + strings.Repeat("ab", 32),
		Target: Identity{Adapter: "mock", Provider: "local", ModelFamily: "scripted", Model: "m1", Tools: []string{"read"}},
		Prompt: strings.Repeat("Summarise the previous node's answer. ", 8), Tools: []string{"read"}, WorkspaceDir: "/tmp/w", WorkspaceMode: "shared"}
	m, err := runRequestToProto(context.Background(), req)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("direct", func(b *testing.B) {
		for b.Loop() {
			if !runRequestUTF8(m) {
				b.Fatal("refused")
			}
		}
	})
	b.Run("reflective", func(b *testing.B) {
		for b.Loop() {
			if invalidUTF8(m.ProtoReflect()) != "" {
				b.Fatal("refused")
			}
		}
	})
}
