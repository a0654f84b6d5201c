package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/obversa/obversa/plugin"
	"github.com/obversa/obversa/sdk"
	"github.com/obversa/obversa/sdk/enginetest"
)

// hangingEngine is the mock engine that never answers Describe or
// Configure (mode says which), or describes itself with a name and a
// version no plugin should give (describe-lies).
type hangingEngine struct {
	*enginetest.Engine
	mode string
}

func (e hangingEngine) Describe(ctx context.Context) (*plugin.Description, error) {
	switch e.mode {
	case "describe-hangs":
		time.Sleep(time.Hour)
	case "describe-lies":
		// A name of 100 000 bytes with a terminal escape, and a version
		// that would add lines to what describe prints.
		d, err := e.Engine.Describe(ctx)
		if err != nil {
			return nil, err
		}
		d.Name = "evil\x1b[2J" + strings.Repeat("x", 100_000)
		d.Version = "1.0\nsha256:          forged"
		return d, nil
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
// ignoring the call's deadline, or lies in Describe.
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

// TestPluginDescribesItselfBadly: a plugin whose Describe gives a name of
// 100 000 bytes and a version holding a line feed is refused by run with
// its name quoted cut, not whole; `plugin describe` shows both quoted on
// their own lines, so the version adds no "sha256:" line of its own.
func TestPluginDescribesItselfBadly(t *testing.T) {
	t.Parallel()
	runFile := helperEngineRunFile(t, "liar", "describe-lies")
	dir := filepath.Dir(runFile)
	r := obversa(t, dir, "run", "--json", runFile)
	if r.code != exitUsage || !strings.Contains(r.stdout, "(100008 bytes in all)") || len(r.stdout)+len(r.stderr) > 4096 {
		t.Errorf("run: exit %d, want %d naming the plugin's name cut, in under 4 KiB (got %d bytes):\n%.2000s", r.code, exitUsage, len(r.stdout)+len(r.stderr), r.stdout+r.stderr)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	launcher := filepath.Join(dir, "liar.sh")
	if err := os.WriteFile(launcher, []byte("#!/bin/sh\nOBVERSA_TEST_HELPER=describe-lies exec "+self+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	d := obversa(t, dir, "plugin", "describe", launcher)
	if d.code != 0 {
		t.Fatalf("describe: exit %d: %s", d.code, d.stderr)
	}
	if n := strings.Count(d.stdout, "\nsha256:"); n != 1 || !strings.Contains(d.stdout, `version:         "1.0\nsha256:          forged"`) || !strings.Contains(d.stdout, `name:            "evil\x1b[2Jxxx`) {
		t.Errorf("describe: want the name and version quoted and one sha256 line (got %d):\n%.600s", n, d.stdout)
	}
}
