// Package nodeengine_test runs the example graph on the JavaScript engine
// and checks the engine with the conformance kit.
package nodeengine_test

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/obversa/obversa/internal/exampletest"
	"github.com/obversa/obversa/internal/testutil"
	"github.com/obversa/obversa/plugin"
	"github.com/obversa/obversa/sdk/conformance"
)

// node is the JavaScript engine's setting: usable when node and the
// plugin's npm packages are there; CI sets OBVERSA_REQUIRE_NODE_ENGINE
// after `npm ci`.
var node = exampletest.Example{Name: "node-engine", Runtime: exampletest.Runtime{RequireEnv: "OBVERSA_REQUIRE_NODE_ENGINE"}}

func TestMain(m *testing.M) {
	os.Exit(exampletest.Main(m, &node, func() string {
		if _, err := exec.LookPath("node"); err != nil {
			return "node is not installed"
		}
		if _, err := os.Stat(filepath.Join(node.PluginDir, "node_modules")); err != nil {
			return "examples/plugins/node-engine/node_modules is missing (npm ci --ignore-scripts there)"
		}
		return ""
	}, func() *exec.Cmd {
		return exec.Command("node", filepath.Join(node.PluginDir, "build.js"), node.Launcher())
	}))
}

func launcher() string { return node.Launcher() }

func TestConformance(t *testing.T) {
	node.Need(t)
	rep := conformance.Run(t, launcher(), conformance.Options{})
	for _, r := range rep.Results {
		// The example serves Run alone, not the optional attempt stream:
		// run.attempts is skipped as UNIMPLEMENTED, and the host falls back.
		if r.Status != conformance.Skip || r.Case == "run.attempts" && strings.Contains(r.Seen, "UNIMPLEMENTED") {
			continue
		}
		t.Errorf("%s skipped (%s); the JavaScript engine serves every scenario", r.Case, r.Seen)
	}
}

func TestRunGraph(t *testing.T) {
	node.Need(t)
	obversa := node.Obversa()
	res := exampletest.RunExample(t, obversa, "run.hcl", "../../bin/node-engine", launcher())
	if res.Kind != "complete" {
		t.Fatalf("result %+v, stderr:\n%s", res, res.Stderr)
	}
	for _, node := range []string{"draft", "critique", "report"} {
		if got := res.Output.Nodes[node]; !strings.HasPrefix(got, "[node] node answer to: ") {
			t.Errorf("node %s answered %q", node, got)
		}
	}
	if !strings.Contains(res.Output.Nodes["critique"], "Critique this draft") {
		t.Errorf("critique %q does not quote its prompt", res.Output.Nodes["critique"])
	}
	if code, stdout, stderr := exampletest.Obversa(t, obversa, ".", "verify", res.Dir); code != 0 || !strings.HasPrefix(stdout, "ok: ") {
		t.Errorf("verify: exit %d: %s %s", code, stdout, stderr)
	}
}

// TestLauncherRefusesChangedCode checks what the pin covers: a launcher
// whose manifest disagrees with a file it loads, or that lacks a file,
// stops before its handshake and says why.
func TestLauncherRefusesChangedCode(t *testing.T) {
	node.Need(t)
	exampletest.CheckRefusals(t, launcher(), []exampletest.Refusal{
		{Name: "changed file", Entry: `"src/engine.js": "[0-9a-f]{64}"`, Replacement: `"src/engine.js": "` + strings.Repeat("0", 64) + `"`, Want: "changed after this launcher was built"},
		{Name: "unlisted file", Entry: `"src/engine.js": "[0-9a-f]{64}",?`, Replacement: ``, Want: "is not one of the files this launcher was built with"},
		{Name: "changed protocol", Entry: `"[^"]*plugin\.proto": "[0-9a-f]{64}"`, Replacement: `"` + filepath.Join(node.Root, "plugin/proto/obversa/plugin/v1/plugin.proto") + `": "` + strings.Repeat("1", 64) + `"`, Want: "plugin.proto changed"},
		{Name: "changed health protocol", Entry: `"[^"]*health\.proto": "[0-9a-f]{64}"`, Replacement: `"` + filepath.Join(node.Root, "plugin/proto/grpc/health/v1/health.proto") + `": "` + strings.Repeat("2", 64) + `"`, Want: "health.proto changed"},
	})
}

// TestLauncherRefusesNodeOptions checks that NODE_OPTIONS, which node
// reads before the launcher runs, stops the plugin.
func TestLauncherRefusesNodeOptions(t *testing.T) {
	node.Need(t)
	var logs testutil.SyncBuffer
	c, err := exampletest.Launch("node", launcher(), &logs, "NODE_OPTIONS=--max-old-space-size=512")
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
	node.Need(t)
	c, err := exampletest.Launch("node", launcher(), io.Discard)
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
