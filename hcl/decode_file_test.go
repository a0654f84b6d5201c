package hcl

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	hclv2 "github.com/hashicorp/hcl/v2"
)

func TestDecodeFileFull(t *testing.T) {
	t.Parallel()
	const path = "testdata/good/full.hcl"
	got, diags := DecodeFile(path)
	if diags.HasErrors() {
		t.Fatalf("DecodeFile: %s", diagsString(t, diags, "", ""))
	}
	dir, err := filepath.Abs("testdata/good")
	if err != nil {
		t.Fatal(err)
	}
	report, err := os.ReadFile("testdata/good/prompts/report.md")
	if err != nil {
		t.Fatal(err)
	}
	home, err := os.UserHomeDir()
	if err != nil {
		t.Fatal(err)
	}
	want := &RunFile{
		Filename:  path,
		Dir:       dir,
		Workspace: Workspace{Root: filepath.Join(dir, "work"), Provider: "git"},
		Storage: Storage{
			Directory:                   "/var/lib/obversa",
			Namespace:                   "team-a",
			MaxEventPayloadBytes:        1024,
			MaxBatchBytes:               2000,
			MaxArtifactBytes:            3000,
			MaxTotalArtifactBytesPerRun: 4000,
			KnownSecretsFromEnv:         []string{"ANTHROPIC_API_KEY", "GH_TOKEN"},
		},
		Limits:        Limits{Timeout: 90 * time.Minute, MaxDispatches: 50, PluginMemory: 512 << 20},
		Restart:       Restart{MaxRestarts: 0, InitialBackoff: 250 * time.Millisecond, MaxBackoff: 2 * time.Second},
		TeardownGrace: 0,
		Preflight:     &Preflight{Timeout: 45 * time.Second},
		TrustedKeys:   []string{"keys/release.pub"},
		Plugins: []Plugin{
			{
				Name: "claude", Type: "engine", Path: filepath.Join(dir, "bin/cmd-engine"),
				SHA256:       "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
				Args:         []string{"--verbose"},
				Env:          map[string]string{"LOG_LEVEL": "debug"},
				Config:       json.RawMessage(`{"command":["claude","-p","--output-format","json"],"retries":2}`),
				TrustedKeys:  []string{"RWQf6LRCGA9i53mlYecO4IzT51TGPpvWucNSCh1CBM0QTaLn73Y7GFO3"},
				StartTimeout: 2 * time.Minute,
				Confine:      Confine{Network: true, MemoryBytes: 512 << 20},
				Range:        Range{Filename: path, Line: 37, Column: 1},
			},
			{Name: "mock", Type: "engine", Path: "/opt/obversa/mock-engine", Confine: Confine{Network: true, MemoryBytes: 512 << 20}, Range: Range{Filename: path, Line: 48, Column: 1}},
			{Name: "shell", Type: "node", Path: filepath.Join(dir, "bin/cmd-engine"), Confine: Confine{MemoryBytes: 512 << 20}, Range: Range{Filename: path, Line: 53, Column: 1}},
			{Name: "sandboxed", Type: "node", Path: filepath.Join(dir, "bin/cmd-engine"), Confine: Confine{
				Write:    []string{filepath.Join(dir, "cache"), filepath.Join(home, ".cache/tool"), "/tmp/shared"},
				DenyRead: []string{filepath.Join(home, ".ssh")}, Network: true, MemoryBytes: 3 << 29, Required: true,
			}, Range: Range{Filename: path, Line: 103, Column: 1}},
		},
		Lanes: []Lane{{
			Name:               "writer",
			Requested:          Target{Adapter: "claude", Provider: "anthropic", ModelFamily: "claude", Model: "sonnet", Tools: []string{"bash"}},
			KnownSubstitutions: []Target{{Adapter: "claude", Provider: "anthropic", ModelFamily: "claude", Model: "sonnet-4", Tools: []string{}}},
			Fallbacks:          []Target{{Adapter: "mock", Provider: "local", ModelFamily: "scripted", Model: "m1", Tools: []string{}}},
			Preflight:          &LanePreflight{Live: "required", UnsupportedStatic: "allow"},
		}},
		Graph: Graph{
			Name:              "dag",
			GlobalConcurrency: 8,
			KeyedConcurrency:  []KeyLimit{{Key: "repo", Limit: 1}, {Key: "api", Limit: 3}},
			StopOnError:       true,
			RetryCapPerNode:   2,
			Approval:          []string{"vet", "publish"},
			PolicyTimeout:     10 * time.Second,
			Nodes: []Node{
				{ID: "draft", Kind: "required", Lane: "writer", Prompt: "Write a haiku about durable logs.",
					Timeout: 10 * time.Minute, Key: "api", Range: Range{Filename: path, Line: 75, Column: 3}},
				{ID: "vet", Kind: "optional", Binding: "shell", DependsOn: []string{"draft"},
					Input:     json.RawMessage(`{"command":["go","vet","./..."],"stdin":"${input.results.draft}"}`),
					RetrySafe: true, Key: "repo", Approval: true, Range: Range{Filename: path, Line: 82, Column: 3}},
				{ID: "publish", Kind: "required", Binding: "shell", DependsOn: []string{"vet"},
					Input: json.RawMessage(`"${input.results.vet}"`), Approval: true, Range: Range{Filename: path, Line: 90, Column: 3}},
				{ID: "report", Kind: "finalizer", Lane: "writer", Prompt: string(report),
					PromptFile: filepath.Join(dir, "prompts/report.md"), Range: Range{Filename: path, Line: 96, Column: 3}},
			},
		},
	}
	if diff := cmp.Diff(want, got, ignorePluginParts); diff != "" {
		t.Errorf("DecodeFile mismatch (-want +got):\n%s", diff)
	}
}

func TestDecodeWarnings(t *testing.T) {
	t.Parallel()
	src := prelude + `
limits { max_dispatches = 1 }
graph "dag" {
  node "a" {
    lane   = "writer"
    prompt = "a"
  }
  node "b" {
    lane   = "writer"
    prompt = "b"
  }
}`
	rf, diags := Decode([]byte(src), "/proj/run.hcl")
	if rf == nil || diags.HasErrors() {
		t.Fatalf("Decode failed: %s", diagsString(t, diags, "/proj/run.hcl", src))
	}
	if len(diags) != 1 || diags[0].Severity != hclv2.DiagWarning || !strings.Contains(diags[0].Summary, "max_dispatches") {
		t.Fatalf("want one max_dispatches warning, got: %s", diagsString(t, diags, "/proj/run.hcl", src))
	}
	if diags[0].Subject == nil || diags[0].Subject.Start.Line != 14 {
		t.Errorf("warning subject = %v, want line 14", diags[0].Subject)
	}
}

func TestDecodeRelativeFilename(t *testing.T) {
	t.Parallel()
	rf, diags := Decode([]byte(prelude+`graph "dag" {
  node "a" {
    lane   = "writer"
    prompt = "a"
  }
}`), "sub/run.hcl")
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	wantDir, err := filepath.Abs("sub")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{"dir": rf.Dir, "root": rf.Workspace.Root, "storage": rf.Storage.Directory, "plugin": rf.Plugins[0].Path, "filename": rf.Filename}
	want := map[string]string{"dir": wantDir, "root": wantDir, "storage": filepath.Join(wantDir, ".obversa"),
		"plugin": filepath.Join(wantDir, "bin/mock-engine"), "filename": "sub/run.hcl"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("paths (-want +got):\n%s", diff)
	}
}

// TestDecodeDirectoryNotUTF8: a run file in a directory whose name is not
// UTF-8 is refused, naming it, since the paths resolved against it would
// be recorded as JSON text with U+FFFD for the bad bytes (a directory of a
// valid UTF-8 name with an escape sequence is fine).
func TestDecodeDirectoryNotUTF8(t *testing.T) {
	t.Parallel()
	src := []byte(prelude + minimalGraph)
	rf, diags := Decode(src, "/proj/a\xffb/run.hcl")
	if rf != nil || !diags.HasErrors() || diags[0].Summary != "Run file's directory is not UTF-8" || !strings.Contains(diags[0].Detail, `"/proj/a\xffb"`) {
		t.Errorf("Decode in a non-UTF-8 directory = %v, %v; want the directory refused by name", rf, diags)
	}
	if _, diags := Decode(src, "/proj/\x1b[31m/run.hcl"); diags.HasErrors() {
		t.Errorf("Decode in a directory named with an escape sequence: %v", diags)
	}
}

func TestDecodeFileMissing(t *testing.T) {
	t.Parallel()
	rf, diags := DecodeFile(filepath.Join(t.TempDir(), "nope.hcl"))
	if rf != nil || !diags.HasErrors() || !strings.Contains(diags[0].Summary, "Cannot read run file") {
		t.Fatalf("DecodeFile(missing) = %v, %v; want an error diagnostic", rf, diags)
	}
}

// TestDecodeFileTooLarge: a run file over MaxRunFileBytes is refused
// with its size, the limit and how to bring it under, not with advice
// about the path and its permissions.
func TestDecodeFileTooLarge(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "big.hcl")
	if err := os.WriteFile(path, make([]byte, MaxRunFileBytes+1), 0o644); err != nil {
		t.Fatal(err)
	}
	_, diags := DecodeFile(path)
	if !diags.HasErrors() {
		t.Fatal("DecodeFile of a file over the limit: no error")
	}
	d := diags[0].Detail
	for _, want := range []string{path, "16777217 bytes", "16777216", "prompt_file"} {
		if !strings.Contains(d, want) {
			t.Errorf("detail %q: want %q in it", d, want)
		}
	}
	if strings.Contains(d, "permissions") {
		t.Errorf("detail %q: a file too large is not a question of permissions", d)
	}
}

// diagsString renders diagnostics for a test failure message.
func diagsString(t *testing.T, diags hclv2.Diagnostics, name, src string) string {
	t.Helper()
	var b strings.Builder
	sources := map[string][]byte{}
	if name != "" {
		sources[name] = []byte(src)
	}
	if err := WriteDiagnostics(&b, diags, sources, 0); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestDecodeReportsEveryProblem checks that independent mistakes are all
// reported in one pass, in source order.
func TestDecodeReportsEveryProblem(t *testing.T) {
	t.Parallel()
	src := `
workspace {
  provider = "svn"
}
` + prelude + `
graph "dag" {
  node "a" {
    lane       = "writr"
    prompt     = "a"
    depends_on = ["b"]
  }
  node "b" {
    lane       = "writer"
    prompt     = "b"
    depends_on = ["a"]
  }
}`
	_, diags := Decode([]byte(src), "/proj/run.hcl")
	var got []string
	for _, dg := range diags {
		got = append(got, dg.Summary)
	}
	want := []string{`Invalid provider "svn"`, `Unknown lane "writr"`, "Dependency cycle: a → b → a"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("summaries (-want +got):\n%s", diff)
	}
}

// TestDecodeNoCascade checks that a broken declaration is reported once,
// not again by everything that refers to it.
func TestDecodeNoCascade(t *testing.T) {
	t.Parallel()
	src := `
plugin "mock" {
  type   = "engine"
  path   = "bin/mock-engine"
  sha256 = "short"
}
plugin "shell" {
  type = "nod"
  path = "bin/cmd-engine"
}
lane "writer" {
  requested = { adapter = "mock", provider = "local", model = 1 }
  preflight {
    live = "yes"
  }
}
graph "dag" {
  node "a" {
    lane   = "writer"
    prompt = "a"
  }
  node "b" {
    binding = "shell"
  }
}`
	_, diags := Decode([]byte(src), "/proj/run.hcl")
	var got []string
	for _, dg := range diags {
		got = append(got, dg.Summary)
	}
	want := []string{"Invalid sha256 digest", `Invalid type "nod"`, `Invalid live "yes"`}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("summaries (-want +got):\n%s", diff)
	}
}
