package plugin_test

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bufbuild/protocompile"
	gocmp "github.com/google/go-cmp/cmp"
	"golang.org/x/mod/modfile"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/descriptorpb"

	// The packages whose registered descriptors the vendored files are
	// compared with; importing plugin links go-plugin's internal protocol
	// package and grpc's health package as well.
	_ "github.com/obversa/obversa/plugin"
	_ "google.golang.org/genproto/googleapis/rpc/status"
)

// vendoredProto is one .proto file under proto/ and where the Go side
// gets the same definitions from.
type vendoredProto struct {
	// file is the path under proto/, as a non-Go plugin compiles it.
	file string
	// registered is the path the Go package registers the file under.
	registered string
	// module is the Go module that compiles it in; its version in the
	// build must be the one plugin/proto/README.md names.
	module string
}

// vendoredProtos lists every .proto file in proto/ (a test keeps the list
// complete); plugin/proto/README.md says where each comes from.
var vendoredProtos = []vendoredProto{
	{"obversa/plugin/v1/plugin.proto", "obversa/plugin/v1/plugin.proto", "github.com/obversa/obversa"},
	{"grpc/health/v1/health.proto", "grpc/health/v1/health.proto", "google.golang.org/grpc"},
	{"google/rpc/status.proto", "google/rpc/status.proto", "google.golang.org/genproto/googleapis/rpc"},
	{"goplugin/grpc_controller.proto", "internal/plugin/grpc_controller.proto", "github.com/hashicorp/go-plugin"},
	{"goplugin/grpc_stdio.proto", "internal/plugin/grpc_stdio.proto", "github.com/hashicorp/go-plugin"},
}

// TestVendoredProtosMatchGo compiles each vendored .proto file and compares
// it with the descriptor the Go packages register, the definitions the
// host and the Go SDK actually speak. A difference means the vendored file
// drifted from the module version in go.mod: copy the file of that version
// again (plugin/proto/README.md says from where). `make proto-check` runs
// this test.
func TestVendoredProtosMatchGo(t *testing.T) {
	t.Parallel()
	for _, v := range vendoredProtos {
		t.Run(v.file, func(t *testing.T) {
			diff, err := protoDrift(t.Context(), v, nil)
			if err != nil {
				t.Fatal(err)
			}
			if diff != "" {
				t.Errorf("proto/%s differs from %s as %s registers it (-Go +vendored):\n%s",
					v.file, v.registered, v.module, diff)
			}
		})
	}
}

// TestVendoredProtosDriftDetected checks that the comparison sees the
// changes that break a plugin: a field number, a streaming flag, a method
// name, a missing message.
func TestVendoredProtosDriftDetected(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file, old, new string
	}{
		{"grpc/health/v1/health.proto", "string service = 1;", "string service = 2;"},
		{"grpc/health/v1/health.proto", "returns (stream HealthCheckResponse)", "returns (HealthCheckResponse)"},
		{"goplugin/grpc_controller.proto", "rpc Shutdown(", "rpc Stop("},
		{"google/rpc/status.proto", "repeated google.protobuf.Any details = 3;", "repeated google.protobuf.Any details = 4;"},
		{"obversa/plugin/v1/plugin.proto", "message ModelCallsResponse {\n  uint64 count = 1;\n}", ""},
	}
	for _, tt := range tests {
		t.Run(tt.file+" "+tt.old, func(t *testing.T) {
			src, err := os.ReadFile(filepath.Join("proto", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(src), tt.old) {
				t.Fatalf("proto/%s has no %q to change", tt.file, tt.old)
			}
			changed := strings.Replace(string(src), tt.old, tt.new, 1)
			if tt.new == "" {
				// A removed message must not leave the file uncompilable.
				changed = strings.Replace(changed, "rpc ModelCalls(ModelCallsRequest) returns (ModelCallsResponse);", "", 1)
			}
			var v vendoredProto
			for _, c := range vendoredProtos {
				if c.file == tt.file {
					v = c
				}
			}
			diff, err := protoDrift(t.Context(), v, map[string]string{tt.file: changed})
			if err != nil {
				t.Fatal(err)
			}
			if diff == "" {
				t.Errorf("changing %q to %q in proto/%s went unnoticed", tt.old, tt.new, tt.file)
			}
		})
	}
}

// protoDrift compiles the vendored file v (with overrides replacing the
// content of files by path under proto/) and returns the difference from
// the descriptor the Go build registers, "" when there is none.
func protoDrift(ctx context.Context, v vendoredProto, overrides map[string]string) (string, error) {
	resolver := &protocompile.SourceResolver{
		ImportPaths: []string{"proto"},
		Accessor: func(path string) (io.ReadCloser, error) {
			rel, err := filepath.Rel("proto", path)
			if text, ok := overrides[filepath.ToSlash(rel)]; ok && err == nil {
				return io.NopCloser(strings.NewReader(text)), nil
			}
			return os.Open(path)
		},
	}
	compiler := protocompile.Compiler{Resolver: protocompile.WithStandardImports(resolver)}
	files, err := compiler.Compile(ctx, v.file)
	if err != nil {
		return "", fmt.Errorf("compiling proto/%s: %w", v.file, err)
	}
	want, err := protoregistry.GlobalFiles.FindFileByPath(v.registered)
	if err != nil {
		return "", fmt.Errorf("the Go build registers no %s (from %s): %w", v.registered, v.module, err)
	}
	got := normalizedDescriptor(files[0])
	exp := normalizedDescriptor(want)
	got.Name = exp.Name
	return gocmp.Diff(exp, got, protocmp.Transform()), nil
}

// normalizedDescriptor returns fd as a FileDescriptorProto without what
// does not change the wire contract: comments, JSON names equal to the
// default, the order of declarations, and file options. File options only
// steer code generators (go_package, java_package, objc_class_prefix), and
// upstream copies differ in them: go-plugin's .pb.go was generated with
// go_package "./plugin", its .proto now names the import path.
func normalizedDescriptor(fd protoreflect.FileDescriptor) *descriptorpb.FileDescriptorProto {
	p := protodesc.ToFileDescriptorProto(fd)
	p.SourceCodeInfo = nil
	p.Options = nil
	slices.SortFunc(p.MessageType, byName[*descriptorpb.DescriptorProto])
	slices.SortFunc(p.EnumType, byName[*descriptorpb.EnumDescriptorProto])
	slices.SortFunc(p.Service, byName[*descriptorpb.ServiceDescriptorProto])
	for _, m := range p.MessageType {
		normalizeMessage(m)
	}
	for _, s := range p.Service {
		slices.SortFunc(s.Method, byName[*descriptorpb.MethodDescriptorProto])
	}
	return p
}

func normalizeMessage(m *descriptorpb.DescriptorProto) {
	slices.SortFunc(m.Field, func(a, b *descriptorpb.FieldDescriptorProto) int {
		return cmp.Compare(a.GetNumber(), b.GetNumber())
	})
	for _, f := range m.Field {
		if f.GetJsonName() == jsonName(f.GetName()) {
			f.JsonName = nil
		}
	}
	slices.SortFunc(m.NestedType, byName[*descriptorpb.DescriptorProto])
	slices.SortFunc(m.EnumType, byName[*descriptorpb.EnumDescriptorProto])
	for _, n := range m.NestedType {
		normalizeMessage(n)
	}
}

// jsonName is protoc's default JSON name of a field: lowerCamelCase.
func jsonName(name string) string {
	var b strings.Builder
	upper := false
	for _, r := range name {
		switch {
		case r == '_':
			upper = true
		case upper && 'a' <= r && r <= 'z':
			b.WriteRune(r - 'a' + 'A')
			upper = false
		default:
			b.WriteRune(r)
			upper = false
		}
	}
	return b.String()
}

func byName[T interface{ GetName() string }](a, b T) int {
	return cmp.Compare(a.GetName(), b.GetName())
}

// TestVendoredProtosListed keeps vendoredProtos complete: every .proto
// file under proto/ is compared with the Go side.
func TestVendoredProtosListed(t *testing.T) {
	t.Parallel()
	var found []string
	err := filepath.WalkDir("proto", func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".proto") {
			rel, _ := filepath.Rel("proto", path)
			found = append(found, filepath.ToSlash(rel))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, v := range vendoredProtos {
		listed = append(listed, v.file)
	}
	slices.Sort(found)
	slices.Sort(listed)
	if diff := gocmp.Diff(listed, found); diff != "" {
		t.Errorf(".proto files under proto/ (+) and the files TestVendoredProtosMatchGo checks (-) differ:\n%s", diff)
	}
}

// TestVendoredProtosReadme checks that plugin/proto/README.md names the
// go.mod version of each upstream module the vendored files match, so that
// the note says which upstream version they are.
func TestVendoredProtosReadme(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("proto/README.md")
	if err != nil {
		t.Fatal(err)
	}
	gomod, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	mf, err := modfile.ParseLax("go.mod", gomod, nil)
	if err != nil {
		t.Fatal(err)
	}
	versions := map[string]string{}
	for _, r := range mf.Require {
		versions[r.Mod.Path] = r.Mod.Version
	}
	for _, v := range vendoredProtos {
		if v.module == mf.Module.Mod.Path {
			continue
		}
		ver, ok := versions[v.module]
		if !ok {
			t.Errorf("%s: module %s is not required in go.mod", v.file, v.module)
			continue
		}
		if want := v.module + " " + ver; !strings.Contains(string(readme), want) {
			t.Errorf("plugin/proto/README.md does not name %q, the go.mod version the Go side compiles %s from; "+
				"copy the file from that version and update the README", want, v.file)
		}
	}
}
