package hcl

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	hclv2 "github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// addFileSeeds adds every file matching pattern to a fuzz corpus.
func addFileSeeds(f *testing.F, patterns ...string) {
	f.Helper()
	for _, pattern := range patterns {
		files, err := filepath.Glob(pattern)
		if err != nil {
			f.Fatal(err)
		}
		for _, path := range files {
			src, err := os.ReadFile(path)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(src)
		}
	}
}

// FuzzDecode checks that Decode never panics and that whatever it accepts
// keeps the RunFile invariants the host relies on.
func FuzzDecode(f *testing.F) {
	addFileSeeds(f, "testdata/good/*.hcl", "testdata/bad/*.hcl")
	f.Add([]byte(prelude + minimalGraph))
	f.Fuzz(func(t *testing.T, src []byte) {
		rf, diags := Decode(src, "fuzz/run.hcl")
		if (rf == nil) != diags.HasErrors() {
			t.Fatalf("RunFile nil = %v but HasErrors = %v", rf == nil, diags.HasErrors())
		}
		for _, dg := range diags {
			if dg.Severity == hclv2.DiagError && dg.Summary == "" {
				t.Fatalf("error diagnostic without a summary: %#v", dg)
			}
		}
		if rf == nil {
			return
		}
		if !filepath.IsAbs(rf.Dir) || !filepath.IsAbs(rf.Workspace.Root) || !filepath.IsAbs(rf.Storage.Directory) {
			t.Fatalf("relative path in %+v", rf)
		}
		if rf.Graph.Name != GraphForm || len(rf.Graph.Nodes) == 0 {
			t.Fatalf("bad graph %+v", rf.Graph)
		}
		ids := map[string]bool{}
		for _, n := range rf.Graph.Nodes {
			checkFuzzedNode(t, n, ids)
			if n.Loop == nil {
				continue
			}
			if n.Lane != "" || n.Binding != "" || len(n.Loop.Members) == 0 || n.Loop.MaxRounds < 1 || n.Loop.MaxRounds > MaxRoundsLimit {
				t.Fatalf("loop %q accepted as %+v", n.ID, n)
			}
			review := false
			for _, m := range n.Loop.Members {
				checkFuzzedNode(t, m, ids)
				review = review || m.ID == n.Loop.Review
			}
			if !review {
				t.Fatalf("loop %q reviews %q, no member", n.ID, n.Loop.Review)
			}
		}
		for _, p := range rf.Plugins {
			if p.Config != nil && !json.Valid(p.Config) {
				t.Fatalf("plugin %q: config is not JSON", p.Name)
			}
		}
	})
}

// checkFuzzedNode holds a decoded node (not a loop) to the invariants the
// host relies on; ids collects the ids seen, which must be unique.
func checkFuzzedNode(t *testing.T, n Node, ids map[string]bool) {
	t.Helper()
	if ids[n.ID] {
		t.Fatalf("id %q accepted twice", n.ID)
	}
	ids[n.ID] = true
	if !validID(n.ID) {
		t.Fatalf("invalid node id %q accepted", n.ID)
	}
	if n.Loop != nil {
		return
	}
	if (n.Lane == "") == (n.Binding == "") {
		t.Fatalf("node %q: lane %q, binding %q", n.ID, n.Lane, n.Binding)
	}
	if _, d := hclsyntax.ParseTemplate([]byte(n.Prompt), "p", hclv2.InitialPos); d.HasErrors() {
		t.Fatalf("node %q: stored prompt %q does not parse: %v", n.ID, n.Prompt, d)
	}
	if n.Input != nil && !json.Valid(n.Input) {
		t.Fatalf("node %q: input is not JSON: %s", n.ID, n.Input)
	}
	if fe := n.ForEach; fe != nil && (fe.MaxItems < 1 || len(fe.Items) > fe.MaxItems || fe.Source != "" && len(fe.Items) > 0) {
		t.Fatalf("node %q: for_each %+v", n.ID, fe)
	}
}

// FuzzDecodeLock checks that DecodeLock never panics and that what it
// accepts survives EncodeLockFile unchanged.
func FuzzDecodeLock(f *testing.F) {
	addFileSeeds(f, "testdata/lock/*.hcl", "testdata/lock/bad/*.hcl", "testdata/lock/*.golden")
	f.Fuzz(func(t *testing.T, src []byte) {
		l, diags := DecodeLock(src, "obversa.lock.hcl")
		if (l == nil) != diags.HasErrors() {
			t.Fatalf("LockFile nil = %v but HasErrors = %v", l == nil, diags.HasErrors())
		}
		if l == nil {
			return
		}
		enc := EncodeLockFile(l)
		back, diags := DecodeLock(enc, "re.hcl")
		if diags.HasErrors() {
			t.Fatalf("re-decoding %q: %v", enc, diags)
		}
		if len(back.Plugins) != len(l.Plugins) {
			t.Fatalf("round trip changed the plugins: %v → %v", l.Plugins, back.Plugins)
		}
		for i := range l.Plugins {
			if back.Plugins[i] != l.Plugins[i] {
				t.Fatalf("round trip changed %v to %v", l.Plugins[i], back.Plugins[i])
			}
		}
	})
}

// FuzzRenderPrompt checks that rendering never panics, whatever the
// template and the recorded results, and that every failure is a
// *RenderError.
func FuzzRenderPrompt(f *testing.F) {
	f.Add("Summarise: ${input.results.draft}", `"text"`)
	f.Add("${input.results.draft.stdout}", `{"stdout":"x"}`)
	f.Add("%{ for k, v in input.results.draft }${k}=${v}%{ endfor }", `{"a":1,"b":[true,null]}`)
	f.Add("${input.results[0]} ${input.results.draft[*].x}", `[{"x":1}]`)
	f.Add("${jsondecode(input.results.draft)}", `"{\"a\":1}"`)
	f.Add("${", `nope`)
	f.Fuzz(func(t *testing.T, src, result string) {
		results := map[string]json.RawMessage{"draft": json.RawMessage(result)}
		if _, err := RenderPrompt(src, results); err != nil {
			var re *RenderError
			if !asRenderError(err, &re) {
				t.Fatalf("error %T is not a *RenderError: %v", err, err)
			}
		}
		in, err := json.Marshal(map[string]any{"a": src, "b": []any{src, 1}})
		if err != nil {
			t.Fatal(err)
		}
		if out, err := RenderInput(in, results); err == nil && !json.Valid(out) {
			t.Fatalf("RenderInput produced invalid JSON %q", out)
		}
	})
}

// asRenderError is errors.As without importing errors twice in tests.
func asRenderError(err error, target **RenderError) bool {
	re, ok := err.(*RenderError)
	if ok {
		*target = re
	}
	return ok
}

// FuzzParseSize holds ParseSize to its grammar: it never panics, a size
// it accepts is not negative, and the whole-byte sizes it accepts read
// back the same.
func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"1GiB", "512MiB", "1.5 GiB", "100MB", "16777216", "0", "2 gigs", "", "9e99TiB", "1e3", "-1MiB", "18446744073709551616"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseSize(s)
		if err != nil {
			return
		}
		if n < 0 {
			t.Fatalf("ParseSize(%q) = %d, negative", s, n)
		}
		if back, err := ParseSize(strconv.FormatInt(n, 10)); err != nil || back != n {
			t.Fatalf("ParseSize(%d) = %d, %v; want it back", n, back, err)
		}
	})
}
