package workspace

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// validSnapshot is a git snapshot with a regular file, an executable and a
// symlink.
func validSnapshot() *Snapshot {
	return snap(strings.Repeat("c", 40),
		ent("a.txt", 0o100644, 5, 'a'),
		ent("bin/run", 0o104755, 10, 'b'),
		ent("link", ModeSymlink, 5, 'c'),
	)
}

// rawJSON marshals s without any validation, for building bad anchors.
func rawJSON(t testing.TB, s *Snapshot) string {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// mutated returns validSnapshot changed by f, with its digest recomputed
// unless f set one, so that only the intended rule is broken.
func mutated(f func(s *Snapshot)) *Snapshot {
	s := validSnapshot()
	d := s.Digest
	f(s)
	if s.Digest == d {
		s.Digest = manifestDigest(s.Manifest)
	}
	return s
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		s    *Snapshot
	}{
		{"git", validSnapshot()},
		{"git without commits", snap("", ent("x", 0o100600, 0, 'e'))},
		{"files", &Snapshot{Provider: ProviderFiles, Root: "/w", Files: 1, Manifest: []Entry{ent("<&>.html", 0o100644, 1, 'd')}, Digest: manifestDigest([]Entry{ent("<&>.html", 0o100644, 1, 'd')})}},
		{"files, empty", &Snapshot{Provider: ProviderFiles, Root: "/", Manifest: []Entry{}, Digest: manifestDigest(nil)}},
		{"none", &Snapshot{Provider: ProviderNone, Root: "/w", Manifest: []Entry{}}},
		{"none, nil manifest", &Snapshot{Provider: ProviderNone, Root: "/w"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b, err := Encode(tt.s)
			if err != nil {
				t.Fatalf("Encode: %v", err)
			}
			got, err := Decode(b)
			if err != nil {
				t.Fatalf("Decode(%s): %v", b, err)
			}
			want := *tt.s
			if want.Manifest == nil {
				want.Manifest = []Entry{}
			}
			if diff := cmp.Diff(&want, got); diff != "" {
				t.Errorf("round trip (-want +got):\n%s", diff)
			}
			if bytes.Contains(b, []byte(`\u003c`)) {
				t.Errorf("Encode escaped HTML characters: %s", b)
			}
		})
	}
}

func TestDecodeAccepts(t *testing.T) {
	t.Parallel()
	valid := rawJSON(t, validSnapshot())
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, []byte(valid), "", "  "); err != nil {
		t.Fatal(err)
	}
	tests := []struct{ name, in string }{
		{"compact", valid},
		{"indented, trailing newline", pretty.String() + "\n"},
		{"fields reordered", reordered(t, validSnapshot())},
		{"none with null manifest", `{"provider":"none","root":"/w","digest":"","files":0,"manifest":null}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if _, err := Decode([]byte(tt.in)); err != nil {
				t.Errorf("Decode(%s) = %v", tt.in, err)
			}
		})
	}
}

// reordered encodes s with its fields in reverse order.
func reordered(t *testing.T, s *Snapshot) string {
	m, err := json.Marshal(s.Manifest)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf(`{"manifest":%s,"head":%q,"files":%d,"digest":%q,"root":%q,"provider":%q}`,
		m, s.Head, s.Files, s.Digest, s.Root, s.Provider)
}

func TestDecodeStrict(t *testing.T) {
	t.Parallel()
	valid := rawJSON(t, validSnapshot())
	replace := func(old, new string) string {
		if !strings.Contains(valid, old) {
			t.Fatalf("%q not in %s", old, valid)
		}
		return strings.Replace(valid, old, new, 1)
	}
	bad := func(f func(s *Snapshot)) string { return rawJSON(t, mutated(f)) }
	tests := []struct {
		name, in, contains string
	}{
		{"empty input", ``, "EOF"},
		{"null", `null`, "want an object"},
		{"array", `[]`, "want an object"},
		{"not JSON", `{"provider":`, "EOF"},
		{"unknown field", replace(`{`, `{"extra":1,`), `unknown field "extra"`},
		{"field in another case", replace(`"provider"`, `"Provider"`), `unknown field "Provider"`},
		{"duplicate field", replace(`{`, `{"root":"/elsewhere",`), `duplicate field "root"`},
		{"unknown entry field", replace(`"path":"a.txt"`, `"path":"a.txt","owner":"me"`), `manifest[0]: unknown field "owner"`},
		{"duplicate entry field", replace(`"path":"a.txt"`, `"path":"a.txt","path":"b.txt"`), `duplicate field "path"`},
		{"missing field", replace(`"files":3,`, ``), `missing field "files"`},
		{"missing manifest", `{"provider":"none","root":"/w","digest":"","files":0}`, `missing field "manifest"`},
		{"missing entry field", replace(`,"size":5`, ``), `manifest[0]: missing field "size"`},
		{"trailing object", valid + ` {}`, "data after"},
		{"trailing garbage", valid + `x`, "data after"},
		{"object in a scalar field", replace(`"files":3`, `"files":{"n":3}`), "want a string or number"},
		{"manifest not an array", replace(`"manifest":[`, `"manifest":{"a":[`) + `}`, "want an array"},
		{"string for a number", replace(`"files":3`, `"files":"3"`), "cannot unmarshal"},
		{"fractional number", replace(`"files":3`, `"files":3.5`), "cannot unmarshal"},
		{"negative mode", replace(`"mode":33188`, `"mode":-1`), "cannot unmarshal"},
		{"unknown provider", bad(func(s *Snapshot) { s.Provider = "svn" }), `unknown provider "svn"`},
		{"relative root", bad(func(s *Snapshot) { s.Root = "ws" }), "not an absolute clean path"},
		{"unclean root", bad(func(s *Snapshot) { s.Root = "/ws/../ws" }), "not an absolute clean path"},
		{"files count", bad(func(s *Snapshot) { s.Files = 2 }), "files is 2 but the manifest has 3"},
		{"unsorted paths", bad(func(s *Snapshot) { s.Manifest[0], s.Manifest[1] = s.Manifest[1], s.Manifest[0] }), "sorted and unique"},
		{"repeated path", bad(func(s *Snapshot) { s.Manifest[1].Path = "a.txt" }), "sorted and unique"},
		{"empty path", bad(func(s *Snapshot) { s.Manifest[0].Path = "" }), "not a clean relative"},
		{"absolute path", bad(func(s *Snapshot) { s.Manifest[0].Path = "/a.txt" }), "not a clean relative"},
		{"dot-dot path", bad(func(s *Snapshot) { s.Manifest[0].Path = "../a.txt" }), "not a clean relative"},
		{"dot path", bad(func(s *Snapshot) { s.Manifest[0].Path = "." }), "not a clean relative"},
		{"double slash", bad(func(s *Snapshot) { s.Manifest[0].Path = "a//b" }), "not a clean relative"},
		{"NUL in path", bad(func(s *Snapshot) { s.Manifest[0].Path = "a\x00" }), "not a clean relative"},
		{"path in .git", bad(func(s *Snapshot) { s.Manifest[0].Path = ".git/config" }), "snapshots skip"},
		{"path in .obversa", bad(func(s *Snapshot) { s.Manifest[0].Path = "a/.obversa/lease" }), "snapshots skip"},
		{"directory mode", bad(func(s *Snapshot) { s.Manifest[0].Mode = 0o040755 }), "neither a regular file nor a symlink"},
		{"unknown mode bits", bad(func(s *Snapshot) { s.Manifest[0].Mode = 0o100644 | 1<<20 }), "unknown bits"},
		{"symlink with permissions", bad(func(s *Snapshot) { s.Manifest[2].Mode = 0o120777 }), "symlink mode"},
		{"negative size", bad(func(s *Snapshot) { s.Manifest[0].Size = -1 }), "negative size"},
		{"uppercase hash", bad(func(s *Snapshot) { s.Manifest[0].SHA256 = strings.Repeat("A", 64) }), "64 lowercase hex"},
		{"short hash", bad(func(s *Snapshot) { s.Manifest[0].SHA256 = "abc" }), "64 lowercase hex"},
		{"digest without prefix", bad(func(s *Snapshot) { s.Digest = strings.TrimPrefix(manifestDigest(s.Manifest), "sha256:") }), "is not sha256:"},
		{"digest of another manifest", bad(func(s *Snapshot) { s.Digest = manifestDigest(s.Manifest[:1]) }), "does not match the manifest"},
		{"entry changed under its digest", replace(`"size":5`, `"size":6`), "does not match the manifest"},
		{"empty digest on files", bad(func(s *Snapshot) { s.Provider, s.Head, s.Digest = ProviderFiles, "", "" }), "is not sha256:"},
		{"head on files", bad(func(s *Snapshot) { s.Provider = ProviderFiles }), "has no head"},
		{"head not hex", bad(func(s *Snapshot) { s.Head = "main" }), "not a commit id"},
		{"none with entries", bad(func(s *Snapshot) { s.Provider, s.Head = ProviderNone, "" }), "has no manifest"},
		{"none with digest", `{"provider":"none","root":"/w","digest":"` + manifestDigest(nil) + `","files":0,"manifest":[]}`, "has no manifest"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, err := Decode([]byte(tt.in))
			if err == nil {
				t.Fatalf("Decode(%s) = %+v, want an error", tt.in, s)
			}
			if !errors.Is(err, ErrInvalidSnapshot) || Code(err) != "WORKSPACE_ANCHOR_INVALID" {
				t.Errorf("Decode error %v does not match ErrInvalidSnapshot", err)
			}
			if !strings.Contains(err.Error(), tt.contains) {
				t.Errorf("Decode error %q does not contain %q", err, tt.contains)
			}
		})
	}
}

func TestEncodeRefusesInvalid(t *testing.T) {
	t.Parallel()
	s := validSnapshot()
	s.Manifest[0].SHA256 = "nothex"
	if _, err := Encode(s); !errors.Is(err, ErrInvalidSnapshot) {
		t.Errorf("Encode = %v, want ErrInvalidSnapshot", err)
	}
	if _, err := Encode(nil); !errors.Is(err, ErrInvalidSnapshot) {
		t.Errorf("Encode(nil) = %v, want ErrInvalidSnapshot", err)
	}
}

// TestDigestCanonicalForm freezes the canonical manifest described in the
// package documentation: a change to it breaks every stored anchor.
func TestDigestCanonicalForm(t *testing.T) {
	t.Parallel()
	hashA, hashB := strings.Repeat("0a", 32), strings.Repeat("b1", 32)
	sum := func(s string) string {
		h := sha256.Sum256([]byte(s))
		return "sha256:" + hex.EncodeToString(h[:])
	}
	tests := []struct {
		name      string
		manifest  []Entry
		canonical string
	}{
		{"empty", nil, "obversa-workspace-manifest-v1\n"},
		{
			name: "file and symlink",
			manifest: []Entry{
				{Path: "dir/a b.txt", Mode: 0o100755, Size: 12, SHA256: hashA},
				{Path: "link", Mode: ModeSymlink, Size: 5, SHA256: hashB},
			},
			canonical: "obversa-workspace-manifest-v1\n" +
				"dir/a b.txt\x00100755 12 " + hashA + "\n" +
				"link\x00120000 5 " + hashB + "\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got, want := manifestDigest(tt.manifest), sum(tt.canonical); got != want {
				t.Errorf("manifestDigest = %s, want %s", got, want)
			}
		})
	}
	// The empty manifest's digest, written out: a fixed point for other
	// implementations.
	if got := manifestDigest(nil); got != sum("obversa-workspace-manifest-v1\n") {
		t.Errorf("empty digest = %s", got)
	}
}

func FuzzDecode(f *testing.F) {
	seeds := []*Snapshot{
		validSnapshot(),
		snap(""),
		{Provider: ProviderFiles, Root: "/w", Files: 1, Manifest: []Entry{ent("é/ü", 0o100644, 0, 'e')}, Digest: manifestDigest([]Entry{ent("é/ü", 0o100644, 0, 'e')})},
		{Provider: ProviderNone, Root: "/w"},
	}
	for _, s := range seeds {
		b, err := Encode(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"provider":"none","root":"/w","digest":"","files":0,"manifest":null}`))
	f.Add([]byte(`{"provider":"none","root":"/w","root":"/x","digest":"","files":0,"manifest":[]}`))
	f.Add([]byte(`{"Provider":"none"}`))
	f.Add([]byte(`[[[[[[[[[[`))
	f.Add([]byte(`{"manifest":[{"path":"a","mode":33188,"size":1,"sha256":"x"}]} {}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := Decode(b)
		if err != nil {
			if !errors.Is(err, ErrInvalidSnapshot) {
				t.Fatalf("Decode error %v does not wrap ErrInvalidSnapshot", err)
			}
			return
		}
		enc, err := Encode(s)
		if err != nil {
			t.Fatalf("Encode of a decoded snapshot: %v", err)
		}
		again, err := Decode(enc)
		if err != nil {
			t.Fatalf("Decode(Encode(s)) = %v\n%s", err, enc)
		}
		if diff := cmp.Diff(s, again); diff != "" {
			t.Fatalf("round trip (-first +second):\n%s", diff)
		}
		enc2, err := Encode(again)
		if err != nil || !bytes.Equal(enc, enc2) {
			t.Fatalf("Encode is not stable: %s vs %s (%v)", enc, enc2, err)
		}
	})
}
