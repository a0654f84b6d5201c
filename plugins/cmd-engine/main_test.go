package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	ctyjson "github.com/zclconf/go-cty/cty/json"

	"github.com/obversa/obversa/plugin"
	"github.com/obversa/obversa/plugin/pluginhost"
)

// binary is the plugin built once for the whole test run.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "cmd-engine-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "cmd-engine")
	out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "building the plugin: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// launch starts the built plugin as typ over the real transport, with only
// PATH in its environment.
func launch(t *testing.T, typ plugin.Type) *plugin.Client {
	t.Helper()
	sum, err := plugin.FileSHA256(binary)
	if err != nil {
		t.Fatal(err)
	}
	c, err := pluginhost.Launch(context.Background(), plugin.LaunchConfig{
		Name: "cmd", Type: typ, Path: binary, SHA256: sum, Env: []string{"PATH=" + os.Getenv("PATH")},
	})
	if err != nil {
		t.Fatalf("Launch: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// preset is a cmd-engine config block from docs/engines.md.
type preset struct {
	name   string // plugin label
	config json.RawMessage
}

// docPresets decodes every plugin block in the Presets section of
// docs/engines.md.
func docPresets(t *testing.T) []preset {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "engines.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "\n## Presets\n")
	if !ok {
		t.Fatal("docs/engines.md has no Presets section")
	}
	var out []preset
	for _, m := range regexp.MustCompile("(?s)```hcl\n(.*?)```").FindAllStringSubmatch(section, -1) {
		f, diags := hclsyntax.ParseConfig([]byte(m[1]), "engines.md", hcl.InitialPos)
		if diags.HasErrors() {
			t.Fatalf("preset does not parse: %v\n%s", diags, m[1])
		}
		for _, b := range f.Body.(*hclsyntax.Body).Blocks {
			attr := b.Body.Attributes["config"]
			v, diags := attr.Expr.Value(nil)
			if diags.HasErrors() {
				t.Fatalf("preset %v config: %v", b.Labels, diags)
			}
			raw, err := ctyjson.Marshal(v, v.Type())
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, preset{name: b.Labels[0], config: raw})
		}
	}
	if len(out) != 3 {
		t.Fatalf("found %d presets, want 3", len(out))
	}
	return out
}

// withFake replaces the executable of a preset's command by a fake CLI.
func withFake(t *testing.T, raw json.RawMessage, fake string) json.RawMessage {
	t.Helper()
	var cfg map[string]any
	if err := json.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	abs, err := filepath.Abs(filepath.Join("testdata", fake))
	if err != nil {
		t.Fatal(err)
	}
	cfg["command"].([]any)[0] = abs
	out, _ := json.Marshal(cfg)
	return out
}

func TestPresetsAgainstFakeCLIs(t *testing.T) {
	t.Parallel()
	type call struct {
		prompt, model string
		want          string             // final text, when success
		kind          plugin.FailureKind // when failure
		retryAfter    time.Duration
		usage         plugin.Usage
		events        []plugin.EventKind
	}
	cases := map[string]struct {
		fake  string
		calls []call
	}{
		"claude": {"fake-claude", []call{
			{prompt: "hi", model: "sonnet", want: "fake answer to a prompt of 2 bytes",
				usage: plugin.Usage{Known: true, Input: 2, Output: 7, CacheRead: 2, CacheCreation: 1}, events: []plugin.EventKind{plugin.EventUsage}},
			{prompt: "RATE_LIMIT", model: "sonnet", kind: plugin.FailureRateLimit, retryAfter: 5 * time.Second},
			{prompt: "AUTH", model: "sonnet", kind: plugin.FailureAuth},
		}},
		"claude-stream": {"fake-claude", []call{
			{prompt: "hey", model: "sonnet", want: "fake answer to a prompt of 3 bytes",
				usage:  plugin.Usage{Known: true, Input: 3, Output: 7, CacheRead: 2, CacheCreation: 1},
				events: []plugin.EventKind{plugin.EventToolUse, plugin.EventToolResult, plugin.EventText, plugin.EventUsage}},
			{prompt: "RATE_LIMIT", model: "sonnet", kind: plugin.FailureRateLimit, retryAfter: 5 * time.Second},
		}},
		"llm": {"fake-llm", []call{
			{prompt: "hello", model: "gpt-x", want: "[gpt-x] hello"},
			{prompt: "hello", model: "missing", kind: plugin.FailureModelUnavailable},
		}},
	}
	c := launch(t, plugin.TypeEngine)
	e, err := c.Engine()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, p := range docPresets(t) {
		tc, ok := cases[p.name]
		if !ok {
			t.Errorf("no test case for preset %q", p.name)
			continue
		}
		// One plugin process serves every preset in turn, as the host
		// would reconfigure it.
		if d, err := e.Configure(ctx, withFake(t, p.config, tc.fake)); err != nil || len(d) > 0 {
			t.Fatalf("preset %s: Configure = %+v, %v", p.name, d, err)
		}
		for _, cl := range tc.calls {
			tgt := plugin.Identity{Adapter: "cmd", Provider: "x", Model: cl.model}
			if _, err := e.Admit(ctx, plugin.AdmitRequest{Target: tgt}); err != nil {
				t.Errorf("preset %s: Admit: %v", p.name, err)
			}
			var kinds []plugin.EventKind
			res, err := e.Run(ctx, plugin.RunRequest{Prompt: cl.prompt, Target: tgt}, func(ev plugin.RunEvent) error {
				kinds = append(kinds, ev.Kind)
				return nil
			})
			if cl.kind != "" {
				var f *plugin.Failure
				if !errors.As(err, &f) || f.Kind != cl.kind || f.RetryAfter != cl.retryAfter {
					t.Errorf("preset %s, prompt %q: %v, want %s failure retrying after %v", p.name, cl.prompt, err, cl.kind, cl.retryAfter)
				}
				continue
			}
			if err != nil {
				t.Errorf("preset %s, prompt %q: %v", p.name, cl.prompt, err)
				continue
			}
			if final, _ := res.Final(); final.Text != cl.want {
				t.Errorf("preset %s: answer %q, want %q", p.name, final.Text, cl.want)
			}
			if diff := cmp.Diff(cl.usage, res.Usage); diff != "" {
				t.Errorf("preset %s: usage (-want +got):\n%s", p.name, diff)
			}
			if diff := cmp.Diff(cl.events, kinds); diff != "" {
				t.Errorf("preset %s: events (-want +got):\n%s", p.name, diff)
			}
		}
	}
}

func TestNodeOverTransport(t *testing.T) {
	t.Parallel()
	c := launch(t, plugin.TypeNode)
	n, err := c.Node()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if d, err := n.Configure(ctx, json.RawMessage(`{"max_output_bytes": 100}`)); err != nil || len(d) > 0 {
		t.Fatalf("Configure = %+v, %v", d, err)
	}
	ws := t.TempDir()
	out, err := n.Invoke(ctx, plugin.InvokeRequest{Input: json.RawMessage(`{"command": ["sh", "-c", "pwd; echo warn >&2"]}`), WorkspaceDir: ws})
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf(`{"exit_code":0,"stdout":%q,"stderr":"warn\n"}`, ws+"\n")
	if string(out) != want {
		t.Errorf("output %s, want %s", out, want)
	}
	_, err = n.Invoke(ctx, plugin.InvokeRequest{Input: json.RawMessage(`{"command": ["sh", "-c", "echo broken >&2; exit 3"]}`), WorkspaceDir: ws})
	var f *plugin.Failure
	if !errors.As(err, &f) || f.Kind != plugin.FailureUnknown || !strings.Contains(f.Message, "exited with code 3: broken") {
		t.Errorf("failing command: %v", err)
	}
	_, err = n.Invoke(ctx, plugin.InvokeRequest{Input: json.RawMessage(`{"command": ["sh", "-c", "yes"]}`), WorkspaceDir: ws})
	if !errors.As(err, &f) || !strings.Contains(f.Message, "OUTPUT_LIMIT") {
		t.Errorf("output cap: %v", err)
	}
	begin := time.Now()
	_, err = n.Invoke(ctx, plugin.InvokeRequest{Input: json.RawMessage(`{"command": ["sleep", "60"], "timeout": "200ms"}`), WorkspaceDir: ws})
	if !errors.As(err, &f) || f.Kind != plugin.FailureTimeout {
		t.Errorf("timeout: %v", err)
	}
	if el := time.Since(begin); el > 5*time.Second {
		t.Errorf("timeout took %v", el)
	}
}
