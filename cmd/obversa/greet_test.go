package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/obversa/obversa/plugin"
	"github.com/obversa/obversa/sdk"
	"github.com/obversa/obversa/sdk/enginetest"
)

// hangingEngine is the mock engine that never answers Describe or
// Configure (mode says which).
type hangingEngine struct {
	*enginetest.Engine
	mode string
}

func (e hangingEngine) Describe(ctx context.Context) (*plugin.Description, error) {
	if e.mode == "describe-hangs" {
		time.Sleep(time.Hour)
	}
	return e.Engine.Describe(ctx)
}

func (e hangingEngine) Configure(ctx context.Context, raw json.RawMessage) ([]plugin.Diagnostic, error) {
	if e.mode == "configure-hangs" {
		time.Sleep(time.Hour)
	}
	return e.Engine.Configure(ctx, raw)
}

// greetHangs serves an engine that hangs in Describe or Configure,
// ignoring the call's deadline.
func greetHangs(mode string) int {
	if err := sdk.ServeEngine(hangingEngine{Engine: enginetest.New(), mode: mode}); err != nil {
		return 1
	}
	return 0
}

// TestPluginGreetHangs: a plugin that never answers Describe or
// Configure is refused after launch.DefaultGreetTimeout by validate
// --plugins and by run (PLUGIN_START_FAILED, naming the plugin and the
// call), instead of holding the command for ever. Each case waits out
// the 30 s bound, in parallel.
func TestPluginGreetHangs(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"describe-hangs", "configure-hangs"} {
		call := "Describe"
		if mode == "configure-hangs" {
			call = "Configure"
		}
		for _, cmd := range []string{"validate", "run"} {
			t.Run(mode+"/"+cmd, func(t *testing.T) {
				t.Parallel()
				runFile := helperEngineRunFile(t, "bad", mode)
				dir := filepath.Dir(runFile)
				args := []string{"validate", "--plugins", runFile}
				if cmd == "run" {
					args = []string{"run", "--json", runFile}
				}
				r, done := obversaWithin(t, dir, 90*time.Second, args...)
				if !done {
					t.Fatalf("%s did not end in 90 s", cmd)
				}
				want := `plugin "bad" did not answer ` + call + ` within 30s`
				if r.code != exitUsage || !strings.Contains(strings.ReplaceAll(r.stdout+r.stderr, `\"`, `"`), want) {
					t.Errorf("%s: exit %d, want %d saying %q:\n%s%s", cmd, r.code, exitUsage, want, r.stdout, r.stderr)
				}
				if cmd == "run" && !strings.Contains(r.stdout, `"code":"PLUGIN_START_FAILED"`) {
					t.Errorf("run --json: want code PLUGIN_START_FAILED:\n%s", r.stdout)
				}
			})
		}
	}
}

// helperEngineRunFile writes and locks a run file of one node whose
// engine, plugin name, is this test binary as the helper plugin mode.
func helperEngineRunFile(t *testing.T, name, mode string) string {
	t.Helper()
	runFile := writeRunFile(t, `
plugin "`+name+`" {
  type = "engine"
  path = "SELF"
  env  = { OBVERSA_TEST_HELPER = "`+mode+`" }
}
lane "w" {
  requested = { adapter = "`+name+`", provider = "local", model_family = "scripted", model = "m1", tools = [] }
}
graph "dag" {
  node "a" {
    lane   = "w"
    prompt = "hi"
  }
}
`)
	if r := obversa(t, filepath.Dir(runFile), "plugin", "lock", runFile); r.code != 0 {
		t.Fatalf("lock: %s", r.stderr)
	}
	return runFile
}
