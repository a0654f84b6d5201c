// Package docs_test checks what the documents promise: in
// docs/writing-plugins.md every Go snippet compiles, the minimal engines in
// Go, JavaScript and Python and the minimal policy in Go pass the
// conformance kit, and every other JavaScript or Python snippet is an
// excerpt of the example engine file it names; in docs/decisions.md the codes table covers every code and event
// name of the host, each with a test or a reason (codes_test.go).
package docs_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/obversa/obversa/internal/exampletest"
	"github.com/obversa/obversa/plugin"
	"github.com/obversa/obversa/sdk/conformance"
)

const guide = "writing-plugins.md"

// maxMinimalLines is the length the guide promises for a minimal engine.
const maxMinimalLines = 60

// block is a fenced code block of the guide.
type block struct {
	// lang is the fence's info string; text the content; line the line of
	// the opening fence.
	lang, text string
	line       int
	// kind and arg come from an HTML comment on the line before the fence:
	// "<!-- test: NAME -->" or "<!-- excerpt: PATH -->".
	kind, arg string
}

var markerRE = regexp.MustCompile(`^<!-- (test|excerpt): (\S+) -->$`)

// readBlocks returns the fenced code blocks of the guide, in order.
func readBlocks(t *testing.T) []block {
	t.Helper()
	f, err := os.Open(guide)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var (
		blocks  []block
		cur     *block
		indent  string
		prev    string
		lineNum int
	)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		lineNum++
		line := sc.Text()
		trimmed := strings.TrimLeft(line, " ")
		switch {
		case cur == nil && strings.HasPrefix(trimmed, "```"):
			indent = line[:len(line)-len(trimmed)]
			cur = &block{lang: strings.TrimPrefix(trimmed, "```"), line: lineNum}
			if m := markerRE.FindStringSubmatch(strings.TrimSpace(prev)); m != nil {
				cur.kind, cur.arg = m[1], m[2]
			}
		case cur != nil && strings.TrimSpace(line) == "```":
			blocks = append(blocks, *cur)
			cur = nil
		case cur != nil:
			cur.text += strings.TrimPrefix(line, indent) + "\n"
		}
		if strings.TrimSpace(line) != "" {
			prev = line
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if cur != nil {
		t.Fatalf("%s:%d: the code block never closes", guide, cur.line)
	}
	return blocks
}

// find returns the block marked "test: name".
func find(t *testing.T, name string) block {
	t.Helper()
	for _, b := range readBlocks(t) {
		if b.kind == "test" && b.arg == name {
			return b
		}
	}
	t.Fatalf("%s has no code block marked <!-- test: %s -->", guide, name)
	return block{}
}

// goPrelude turns a Go snippet that is not a whole file into one: the
// imports a snippet may use, each used once so that none is unused.
const goPrelude = `package snippet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/obversa/obversa/plugin"
	"github.com/obversa/obversa/sdk"
	"github.com/obversa/obversa/sdk/jsonconfig"
)

var (
	_ = context.Background
	_ = json.Marshal
	_ = errors.New
	_ = fmt.Sprint
	_ = os.Exit
	_ = time.Second
	_ = plugin.ProtocolVersion
	_ = sdk.Fail
	_ = jsonconfig.Decode
)

`

var (
	repoOnce sync.Once
	repoRoot string
	repoErr  error
)

func root(t *testing.T) string {
	t.Helper()
	repoOnce.Do(func() { repoRoot, repoErr = exampletest.RepoRoot() })
	if repoErr != nil {
		t.Fatal(repoErr)
	}
	return repoRoot
}

// goSnippets writes an overlay that places each Go snippet of the guide in
// a package of its own under internal/docsnippets (which does not exist on
// disk) and returns the overlay file and the packages, keyed by snippet
// name ("minimal-go" for the minimal engine, "line-N" for the others).
func goSnippets(t *testing.T, dir string) (string, map[string]block, map[string]string) {
	t.Helper()
	replace := map[string]string{}
	blocks := map[string]block{}
	pkgs := map[string]string{}
	for _, b := range readBlocks(t) {
		if b.lang != "go" {
			continue
		}
		name := fmt.Sprintf("line-%d", b.line)
		if b.kind == "test" {
			name = b.arg
		}
		src := b.text
		if !strings.HasPrefix(strings.TrimSpace(stripComments(src)), "package ") {
			src = goPrelude + src
		}
		file := filepath.Join(dir, name+".go")
		if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		pkgDir := strings.ReplaceAll(name, "-", "")
		replace[filepath.Join(root(t), "internal", "docsnippets", pkgDir, "snippet.go")] = file
		blocks[name] = b
		pkgs[name] = "github.com/obversa/obversa/internal/docsnippets/" + pkgDir
	}
	if len(pkgs) == 0 {
		t.Fatalf("%s has no Go code blocks", guide)
	}
	overlay, _ := json.Marshal(map[string]any{"Replace": replace})
	path := filepath.Join(dir, "overlay.json")
	if err := os.WriteFile(path, overlay, 0o644); err != nil {
		t.Fatal(err)
	}
	return path, blocks, pkgs
}

// stripComments drops the leading // comment lines of a Go file.
func stripComments(src string) string {
	lines := strings.Split(src, "\n")
	for len(lines) > 0 && strings.HasPrefix(strings.TrimSpace(lines[0]), "//") {
		lines = lines[1:]
	}
	return strings.Join(lines, "\n")
}

// TestGoSnippetsCompile builds every Go code block of the guide, in one go
// build: a whole file as it is, any other snippet after goPrelude's
// imports.
func TestGoSnippetsCompile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	overlay, blocks, pkgs := goSnippets(t, dir)
	args := []string{"build", "-overlay", overlay}
	for _, pkg := range pkgs {
		args = append(args, pkg)
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = root(t)
	out, err := cmd.CombinedOutput()
	if err == nil {
		return
	}
	// Name the guide's line of each snippet that failed.
	for name, pkg := range pkgs {
		if strings.Contains(string(out), strings.TrimPrefix(pkg, "github.com/obversa/obversa/")) {
			t.Errorf("%s:%d: the Go snippet (%s) does not compile", guide, blocks[name].line, name)
		}
	}
	t.Fatalf("go build of the guide's Go snippets: %v\n%s", err, out)
}

// TestMinimalEngines runs the conformance kit on the guide's three minimal
// engines, as the guide says to build and run them: every case that runs
// passes. The JavaScript and Python ones need their runtimes; they skip
// without them unless CI's variables require them.
func TestMinimalEngines(t *testing.T) {
	t.Parallel()
	repo := root(t)
	t.Run("go", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		overlay, _, pkgs := goSnippets(t, dir)
		bin := filepath.Join(dir, "echo")
		checkLength(t, find(t, "minimal-go"))
		if err := exampletest.RunAll(repo, exec.Command("go", "build", "-overlay", overlay, "-o", bin, pkgs["minimal-go"])); err != nil {
			t.Fatal(err)
		}
		passes(t, bin, conformance.Options{})
	})
	t.Run("javascript", func(t *testing.T) {
		t.Parallel()
		nodeModules := filepath.Join(repo, "examples", "plugins", "node-engine", "node_modules")
		rt := exampletest.Runtime{RequireEnv: "OBVERSA_REQUIRE_NODE_ENGINE"}
		if _, err := exec.LookPath("node"); err != nil {
			rt.Missing = "node is not installed"
		} else if _, err := os.Stat(nodeModules); err != nil {
			rt.Missing = "examples/plugins/node-engine/node_modules is missing (npm ci --ignore-scripts there)"
		}
		rt.Need(t)
		b := find(t, "minimal-js")
		checkLength(t, b)
		bin := filepath.Join(t.TempDir(), "echo.js")
		if err := os.WriteFile(bin, []byte(b.text), 0o755); err != nil {
			t.Fatal(err)
		}
		// The guide installs @grpc/grpc-js and @grpc/proto-loader beside
		// the script; the test uses the node engine's pinned copies.
		passes(t, bin, conformance.Options{
			Args: []string{filepath.Join(repo, "plugin", "proto")},
			Env:  map[string]string{"NODE_PATH": nodeModules},
		})
	})
	t.Run("python", func(t *testing.T) {
		t.Parallel()
		rt := exampletest.Runtime{RequireEnv: "OBVERSA_REQUIRE_PYTHON_ENGINE"}
		if out, err := exec.Command("/usr/bin/python3", "-c", "import grpc, grpc_tools").CombinedOutput(); err != nil {
			rt.Missing = fmt.Sprintf("/usr/bin/python3 cannot import grpc and grpc_tools (%v: %s); apt-get install -y python3-grpcio python3-grpc-tools python3-protobuf", err, strings.TrimSpace(string(out)))
		}
		rt.Need(t)
		b := find(t, "minimal-python")
		checkLength(t, b)
		dir := t.TempDir()
		generate := exec.Command("bash", "-euo", "pipefail", "-c", find(t, "minimal-python-generate").text)
		generate.Env = append(os.Environ(), "OBVERSA="+repo)
		if err := exampletest.RunAll(dir, generate); err != nil {
			t.Fatalf("the guide's generation command: %v", err)
		}
		bin := filepath.Join(dir, "echo.py")
		if err := os.WriteFile(bin, []byte(b.text), 0o755); err != nil {
			t.Fatal(err)
		}
		passes(t, bin, conformance.Options{Args: []string{filepath.Join(dir, "gen")}})
	})
}

// TestMinimalPolicy runs the conformance kit on the guide's minimal
// policy with the guide's conformance file: every case of a policy runs
// and passes, and the file's actions get the verdicts it names.
func TestMinimalPolicy(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	overlay, _, pkgs := goSnippets(t, dir)
	checkLength(t, find(t, "minimal-policy-go"))
	bin := filepath.Join(dir, "push-guard")
	if err := exampletest.RunAll(root(t), exec.Command("go", "build", "-overlay", overlay, "-o", bin, pkgs["minimal-policy-go"])); err != nil {
		t.Fatal(err)
	}
	opts, err := conformance.DecodeOptions([]byte(find(t, "minimal-policy-conformance").text), dir)
	if err != nil {
		t.Fatalf("the guide's conformance file for the minimal policy: %v", err)
	}
	if len(opts.Actions) == 0 {
		t.Fatal("the guide's conformance file for the minimal policy lists no actions")
	}
	rep := conformance.Run(t, bin, opts)
	want := conformance.CasesFor(plugin.TypePolicy)
	if n := rep.Count(conformance.Pass); n != len(want) {
		t.Errorf("%d of a policy's %d cases passed; the minimal policy passes them all", n, len(want))
	}
	if res, ok := rep.Result("policy.actions"); !ok || res.Status != conformance.Pass {
		t.Errorf("policy.actions: %+v", res)
	}
}

func checkLength(t *testing.T, b block) {
	t.Helper()
	if n := strings.Count(b.text, "\n"); n > maxMinimalLines {
		t.Errorf("%s:%d: the minimal engine has %d lines; the guide promises %d", guide, b.line, n, maxMinimalLines)
	}
}

// passes runs the kit on bin and requires every case to pass or to be
// skipped for want of scenario control, which a minimal engine does not
// serve.
func passes(t *testing.T, bin string, opts conformance.Options) {
	t.Helper()
	rep := conformance.Run(t, bin, opts)
	for _, res := range rep.Results {
		// The minimal engines of other languages serve Run alone, not the
		// optional attempt stream.
		if res.Status == conformance.Skip && !strings.Contains(res.Seen, "Conformance service") &&
			!strings.Contains(res.Seen, "does not declare") && !strings.Contains(res.Seen, "UNIMPLEMENTED for Attempts") {
			t.Errorf("case %s skipped for another reason than scenario control or the optional attempt stream: %s", res.Case, res.Seen)
		}
	}
	if n := rep.Count(conformance.Pass); n < 15 {
		t.Errorf("%d cases passed; a minimal engine passes every scenario-free case (15)", n)
	}
}

// TestExcerpts checks that every JavaScript and Python snippet is marked,
// and that each excerpt still appears in the file it names: its lines, in
// order, with any lines between them; a line "…" stands for lines left
// out.
func TestExcerpts(t *testing.T) {
	t.Parallel()
	repo := root(t)
	n := 0
	for _, b := range readBlocks(t) {
		if (b.lang == "js" || b.lang == "python") && b.kind == "" {
			t.Errorf("%s:%d: a %s snippet without <!-- test: … --> or <!-- excerpt: FILE -->", guide, b.line, b.lang)
		}
		if b.kind != "excerpt" {
			continue
		}
		n++
		src, err := os.ReadFile(filepath.Join(repo, b.arg))
		if err != nil {
			t.Errorf("%s:%d: %v", guide, b.line, err)
			continue
		}
		lines := strings.Split(string(src), "\n")
		at := 0
		for _, want := range strings.Split(b.text, "\n") {
			want = strings.TrimSpace(want)
			if want == "" || want == "…" {
				continue
			}
			found := false
			for ; at < len(lines); at++ {
				if strings.TrimSpace(lines[at]) == want {
					found = true
					at++
					break
				}
			}
			if !found {
				t.Errorf("%s:%d: excerpt line %q is not in %s (after the lines before it)", guide, b.line, want, b.arg)
				break
			}
		}
	}
	if n < 10 {
		t.Errorf("%d excerpts checked; the guide has more", n)
	}
}
