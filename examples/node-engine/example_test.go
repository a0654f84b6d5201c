// Package nodeengine_test runs the example graph on the JavaScript engine
// and checks the engine with the conformance kit.
package nodeengine_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/obversa/obversa/internal/testutil"
	"github.com/obversa/obversa/plugin"
	"github.com/obversa/obversa/sdk/conformance"
)

// requireEnv makes a missing node or node_modules a failure instead of a
// skip; CI sets it after `npm ci`.
const requireEnv = "OBVERSA_REQUIRE_NODE_ENGINE"

var (
	// repoRoot is the module root; pluginDir the JavaScript engine.
	repoRoot, pluginDir string
	// binDir holds obversa and the node-engine launcher, built by TestMain.
	binDir string
	// unavailable says why the tests cannot run ("" when they can).
	unavailable string
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	wd, err := os.Getwd()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	repoRoot = filepath.Dir(filepath.Dir(wd))
	pluginDir = filepath.Join(repoRoot, "examples", "plugins", "node-engine")
	dir, err := os.MkdirTemp("", "obversa-node-engine-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	binDir = dir
	switch _, err := exec.LookPath("node"); {
	case err != nil:
		unavailable = "node is not installed"
	case !exists(filepath.Join(pluginDir, "node_modules")):
		unavailable = "examples/plugins/node-engine/node_modules is missing (npm ci --ignore-scripts there)"
	}
	if unavailable == "" {
		if err := build(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	return m.Run()
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// build builds obversa and the launcher into binDir.
func build() error {
	steps := []*exec.Cmd{
		exec.Command("go", "build", "-o", filepath.Join(binDir, "obversa"), "./cmd/obversa"),
		exec.Command("node", filepath.Join(pluginDir, "build.js"), filepath.Join(binDir, "node-engine")),
	}
	for _, cmd := range steps {
		cmd.Dir = repoRoot
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("%v: %v\n%s", cmd.Args, err, out)
		}
	}
	return nil
}

// needNode skips (or, in CI, fails) a test when node or the dependencies
// are missing.
func needNode(t *testing.T) {
	t.Helper()
	if unavailable == "" {
		return
	}
	if os.Getenv(requireEnv) != "" {
		t.Fatalf("%s, and %s is set", unavailable, requireEnv)
	}
	t.Skip(unavailable)
}

func launcher() string { return filepath.Join(binDir, "node-engine") }

func TestConformance(t *testing.T) {
	needNode(t)
	rep := conformance.Run(t, launcher(), conformance.Options{})
	if n := rep.Count(conformance.Skip); n > 0 {
		t.Errorf("%d case(s) skipped; the JavaScript engine serves every scenario", n)
	}
}

// obversa runs the built CLI in dir.
func obversa(t *testing.T, dir string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "obversa"), args...)
	cmd.Dir = dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return ee.ExitCode(), out.String(), errb.String()
	case err != nil:
		t.Fatalf("obversa %v: %v", args, err)
	}
	return 0, out.String(), errb.String()
}

func TestRunGraph(t *testing.T) {
	needNode(t)
	src, err := os.ReadFile("run.hcl")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.ReplaceAll(string(src), `"../../bin/node-engine"`, fmt.Sprintf("%q", launcher()))
	dir := t.TempDir()
	runFile := filepath.Join(dir, "run.hcl")
	if err := os.WriteFile(runFile, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := obversa(t, dir, "plugin", "lock", runFile); code != 0 {
		t.Fatalf("plugin lock: exit %d: %s", code, stderr)
	}
	code, stdout, stderr := obversa(t, dir, "run", "--json", "--run-id", "node", runFile)
	var res struct {
		Kind   string `json:"kind"`
		Output struct {
			Nodes map[string]string `json:"nodes"`
		} `json:"output"`
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(stdout)), &res); err != nil {
		t.Fatalf("run --json printed %q (exit %d, stderr %s): %v", stdout, code, stderr, err)
	}
	if code != 0 || res.Kind != "complete" {
		t.Fatalf("exit %d, result %+v, stderr:\n%s", code, res, stderr)
	}
	for _, node := range []string{"draft", "critique", "report"} {
		if got := res.Output.Nodes[node]; !strings.HasPrefix(got, "[node] node answer to: ") {
			t.Errorf("node %s answered %q", node, got)
		}
	}
	if !strings.Contains(res.Output.Nodes["critique"], "Critique this draft") {
		t.Errorf("critique %q does not quote its prompt", res.Output.Nodes["critique"])
	}
	runDir := filepath.Join(dir, ".obversa", "default", "runs", "node")
	if code, stdout, stderr := obversa(t, dir, "verify", runDir); code != 0 || !strings.HasPrefix(stdout, "ok: ") {
		t.Errorf("verify: exit %d: %s %s", code, stdout, stderr)
	}
}

// launch starts the launcher at path as the host does, logging into logs,
// with env added to its environment.
func launch(path string, logs io.Writer, env ...string) (*plugin.Client, error) {
	sum, err := plugin.FileSHA256(path)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return plugin.Launch(ctx, plugin.LaunchConfig{
		Name: "node", Type: plugin.TypeEngine, Path: path, SHA256: sum,
		Env:    append([]string{"PATH=" + os.Getenv("PATH")}, env...),
		Logger: hclog.New(&hclog.LoggerOptions{Output: logs, Level: hclog.Debug}),
	})
}

// TestLauncherRefusesChangedCode checks what the pin covers: a launcher
// whose manifest disagrees with a file it loads, or that lacks a file,
// stops before its handshake and says why.
func TestLauncherRefusesChangedCode(t *testing.T) {
	needNode(t)
	orig, err := os.ReadFile(launcher())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, entry, replacement, want string
	}{
		{"changed file", `"src/engine.js": "[0-9a-f]{64}"`, `"src/engine.js": "` + strings.Repeat("0", 64) + `"`, "changed after this launcher was built"},
		{"unlisted file", `"src/engine.js": "[0-9a-f]{64}",?`, ``, "is not one of the files this launcher was built with"},
		{"changed protocol", `"[^"]*plugin\.proto": "[0-9a-f]{64}"`, `"` + filepath.Join(repoRoot, "plugin/proto/obversa/plugin/v1/plugin.proto") + `": "` + strings.Repeat("1", 64) + `"`, "plugin.proto changed"},
		{"changed health protocol", `"[^"]*health\.proto": "[0-9a-f]{64}"`, `"` + filepath.Join(repoRoot, "plugin/proto/grpc/health/v1/health.proto") + `": "` + strings.Repeat("2", 64) + `"`, "health.proto changed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			re := regexp.MustCompile(tt.entry)
			if !re.Match(orig) {
				t.Fatalf("launcher has no manifest entry matching %s", tt.entry)
			}
			path := filepath.Join(t.TempDir(), "node-engine")
			if err := os.WriteFile(path, re.ReplaceAll(orig, []byte(tt.replacement)), 0o755); err != nil {
				t.Fatal(err)
			}
			var logs testutil.SyncBuffer
			c, err := launch(path, &logs)
			if err == nil {
				c.Close()
				t.Fatal("the launcher started the plugin")
			}
			if !errors.Is(err, plugin.ErrHandshake) || !strings.Contains(logs.String(), tt.want) {
				t.Errorf("launch error %v; host log:\n%s\nwant ErrHandshake and %q", err, logs.String(), tt.want)
			}
		})
	}
}

// TestLauncherRefusesNodeOptions checks that NODE_OPTIONS, which node
// reads before the launcher runs, stops the plugin.
func TestLauncherRefusesNodeOptions(t *testing.T) {
	needNode(t)
	var logs testutil.SyncBuffer
	c, err := launch(launcher(), &logs, "NODE_OPTIONS=--max-old-space-size=512")
	if err == nil {
		c.Close()
		t.Fatal("the launcher started the plugin with NODE_OPTIONS set")
	}
	if !strings.Contains(logs.String(), "NODE_OPTIONS is set") {
		t.Errorf("launch error %v; host log:\n%s", err, logs.String())
	}
}

// TestTypedUnaryFailure checks the JavaScript encoding of a typed failure
// in a unary call's status details: Admit of a target without a model.
func TestTypedUnaryFailure(t *testing.T) {
	needNode(t)
	c, err := launch(launcher(), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	e, err := c.Engine()
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.Admit(t.Context(), plugin.AdmitRequest{Target: plugin.Identity{Adapter: "node", Provider: "local"}})
	var f *plugin.Failure
	if !errors.As(err, &f) || f.Kind != plugin.FailureInvalidConfig || f.Provider != "local" {
		t.Fatalf("Admit without a model: %v (%#v), want an invalid_config failure for provider local", err, f)
	}
}
