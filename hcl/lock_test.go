package hcl

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	hclv2 "github.com/hashicorp/hcl/v2"
)

const testDigest = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func TestDecodeLockFileGood(t *testing.T) {
	t.Parallel()
	got, diags := DecodeLockFile("testdata/lock/good.hcl")
	if diags.HasErrors() {
		t.Fatal(diagsString(t, diags, "", ""))
	}
	want := &LockFile{Plugins: []LockedPlugin{
		{Name: "claude", Path: "bin/cmd-engine", SHA256: testDigest, KeyID: "5BAD1E5AA1B2C3D4", Signature: "sha256:" + testDigest},
		{Name: "shell", Path: "bin/cmd-engine", SHA256: testDigest},
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("DecodeLockFile (-want +got):\n%s", diff)
	}
}

func TestDecodeLockFileMissingIsEmpty(t *testing.T) {
	t.Parallel()
	got, diags := DecodeLockFile(filepath.Join(t.TempDir(), LockFileName))
	if len(diags) != 0 {
		t.Fatalf("diagnostics for a missing lock file: %v", diags)
	}
	if diff := cmp.Diff(&LockFile{}, got); diff != "" {
		t.Errorf("DecodeLockFile(missing) (-want +got):\n%s", diff)
	}
}

func TestDecodeLockFileUnreadable(t *testing.T) {
	t.Parallel()
	// A directory exists but cannot be read as a file.
	got, diags := DecodeLockFile(t.TempDir())
	if got != nil || !diags.HasErrors() || diags[0].Summary != "Cannot read lock file" {
		t.Fatalf("DecodeLockFile(dir) = %v, %v; want a read error", got, diags)
	}
}

func TestDecodeLockBad(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("testdata/lock/bad/*.hcl")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no bad lock files")
	}
	for _, path := range files {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".hcl"), func(t *testing.T) {
			t.Parallel()
			src, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			want := wantLine(t, src)
			l, diags := DecodeLock(src, path)
			if l != nil || !diags.HasErrors() {
				t.Fatalf("DecodeLock succeeded; want error %q", want)
			}
			found := false
			for _, dg := range diags {
				found = found || (dg.Severity == hclv2.DiagError && strings.Contains(dg.Summary, want))
			}
			if !found {
				t.Errorf("no error with summary %q in:\n%s", want, diagsString(t, diags, path, string(src)))
			}
			checkDiagnosticQuality(t, diags)
			var out bytes.Buffer
			if err := WriteDiagnostics(&out, diags, map[string][]byte{path: src}, 100); err != nil {
				t.Fatal(err)
			}
			compareGolden(t, strings.TrimSuffix(path, ".hcl")+".golden", out.Bytes())
		})
	}
}

func TestLockFileSetLookup(t *testing.T) {
	t.Parallel()
	var l LockFile
	steps := []struct {
		set  LockedPlugin
		want []string // names in order after the step
	}{
		{LockedPlugin{Name: "m", SHA256: "1"}, []string{"m"}},
		{LockedPlugin{Name: "a", SHA256: "2"}, []string{"a", "m"}},
		{LockedPlugin{Name: "z", SHA256: "3"}, []string{"a", "m", "z"}},
		{LockedPlugin{Name: "m", SHA256: "4"}, []string{"a", "m", "z"}},
		{LockedPlugin{Name: "b", SHA256: "5"}, []string{"a", "b", "m", "z"}},
	}
	for _, s := range steps {
		l.Set(s.set)
		var names []string
		for _, p := range l.Plugins {
			names = append(names, p.Name)
		}
		if diff := cmp.Diff(s.want, names); diff != "" {
			t.Fatalf("after Set(%q) (-want +got):\n%s", s.set.Name, diff)
		}
		if got, ok := l.Lookup(s.set.Name); !ok || got != s.set {
			t.Fatalf("Lookup(%q) = %v, %v; want %v", s.set.Name, got, ok, s.set)
		}
	}
	if _, ok := l.Lookup("nope"); ok {
		t.Error("Lookup of an absent name succeeded")
	}
}

func TestEncodeLockFile(t *testing.T) {
	t.Parallel()
	l := &LockFile{Plugins: []LockedPlugin{
		{Name: "shell", Path: "bin/cmd-engine", SHA256: testDigest},
		{Name: "claude", Path: "bin/cmd-engine", SHA256: testDigest, KeyID: "5bad1e5aa1b2c3d4", Signature: "sha256:" + testDigest},
	}}
	got := EncodeLockFile(l)
	compareGolden(t, "testdata/lock/encoded.golden", got)
	if again := EncodeLockFile(l); !bytes.Equal(got, again) {
		t.Error("EncodeLockFile is not stable")
	}
	back, diags := DecodeLock(got, "encoded.hcl")
	if diags.HasErrors() {
		t.Fatal(diagsString(t, diags, "encoded.hcl", string(got)))
	}
	want := &LockFile{}
	for _, p := range l.Plugins {
		p.KeyID = strings.ToUpper(p.KeyID)
		want.Set(p)
	}
	if diff := cmp.Diff(want, back); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff("# This file is maintained by \"obversa plugin lock\". Manual edits may be lost.", strings.SplitN(string(got), "\n", 2)[0]); diff != "" {
		t.Errorf("header (-want +got):\n%s", diff)
	}
}

func TestLockFilePath(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"run.hcl":               "obversa.lock.hcl",
		"examples/a/run.hcl":    "examples/a/obversa.lock.hcl",
		"/abs/dir/pipeline.hcl": "/abs/dir/obversa.lock.hcl",
	}
	for in, want := range cases {
		if got := LockFilePath(in); got != want {
			t.Errorf("LockFilePath(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestLockPath(t *testing.T) {
	t.Parallel()
	tests := []struct{ written, want string }{
		{"bin/cmd-engine", filepath.Join("bin", "cmd-engine")},
		{"./cmd-engine", "cmd-engine"},
		{"../../bin/mock-engine", filepath.Join("..", "..", "bin", "mock-engine")},
		{"bin/../../bin/x", filepath.Join("..", "bin", "x")},
		{"/opt/plugins/cmd", "/opt/plugins/cmd"},
		{"..x/y", filepath.Join("..x", "y")},
	}
	for _, tt := range tests {
		src := `plugin "p" {
  type = "node"
  path = "` + tt.written + `"
}
graph "dag" {
  node "a" {
    binding = "p"
  }
}
`
		rf, diags := Decode([]byte(src), "/work/run/run.hcl")
		if diags.HasErrors() {
			t.Fatal(diagsString(t, diags, "/work/run/run.hcl", src))
		}
		if got := rf.Plugins[0].LockPath(); got != tt.want {
			t.Errorf("path %q: LockPath() = %q, want %q", tt.written, got, tt.want)
		}
	}
	if got := (&Plugin{Path: "/abs/bin"}).LockPath(); got != "/abs/bin" {
		t.Errorf("a Plugin without WrittenPath: LockPath() = %q", got)
	}
}

// TestDecodeLockFileDanglingSymlink: a lock file that is a symbolic link
// to a missing target is an error naming the file and the target, not an
// empty lock file (which would drop every pin it was meant to hold); a
// lock file that does not exist at all is still an empty one.
func TestDecodeLockFileDanglingSymlink(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, LockFileName)
	if lf, diags := DecodeLockFile(path); diags.HasErrors() || lf == nil || len(lf.Plugins) != 0 {
		t.Fatalf("no lock file: %v, %v; want an empty lock file", lf, diags)
	}
	target := filepath.Join(dir, "shared", "obversa.lock.hcl")
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
	lf, diags := DecodeLockFile(path)
	if !diags.HasErrors() || lf != nil {
		t.Fatalf("dangling symlink: %v, %v; want an error", lf, diags)
	}
	if msg := diags.Error(); !strings.Contains(msg, path) || !strings.Contains(msg, target) {
		t.Errorf("dangling symlink: %q, want it to name %s and %s", msg, path, target)
	}
}
