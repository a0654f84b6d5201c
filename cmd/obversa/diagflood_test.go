package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/obversa/obversa/host/validate"
	"github.com/obversa/obversa/plugin"
	"github.com/obversa/obversa/sdk"
	"github.com/obversa/obversa/sdk/enginetest"
)

// floodEscape is an OSC 52 sequence (write the clipboard) a flooding
// plugin puts in each diagnostic.
const floodEscape = "\x1b]52;c;aGk=\x07"

// floodCount is how many diagnostics the flooding plugin's Configure
// answers.
const floodCount = 100_000

// floodingEngine is the mock engine whose Configure answers floodCount
// error diagnostics, each with an escape sequence, the first ten with a 64 KiB detail.
type floodingEngine struct{ *enginetest.Engine }

func (e floodingEngine) Configure(context.Context, json.RawMessage) ([]plugin.Diagnostic, error) {
	ds := make([]plugin.Diagnostic, floodCount)
	long := strings.Repeat("x", 64<<10)
	for i := range ds {
		ds[i] = plugin.Diagnostic{Severity: plugin.SeverityError, Summary: "bad " + floodEscape + " value"}
		if i < 10 {
			ds[i].Detail = long
		}
	}
	return ds, nil
}

// Describe answers the mock engine's description with the escape in its
// version.
func (e floodingEngine) Describe(ctx context.Context) (*plugin.Description, error) {
	d, err := e.Engine.Describe(ctx)
	if d != nil {
		d.Version += floodEscape
	}
	return d, err
}

// diagFlood serves floodingEngine.
func diagFlood() int {
	if err := sdk.ServeEngine(floodingEngine{Engine: enginetest.New()}); err != nil {
		return 1
	}
	return 0
}

// TestPluginDiagnosticsFlood: a plugin whose Configure answers 100 000
// diagnostics with an escape sequence in each is shown the first
// validate.MaxPluginDiagnostics of them, escaped and each bounded, then a line
// saying how many more there were — by validate --plugins and run, as
// text and as --json (with the count).
func TestPluginDiagnosticsFlood(t *testing.T) {
	t.Parallel()
	runFile := helperEngineRunFile(t, "flood", "diag-flood")
	dir := filepath.Dir(runFile)
	more := `and 99900 more diagnostics from plugin "flood"`
	for _, args := range [][]string{
		{"validate", "--plugins", runFile},
		{"validate", "--plugins", "--json", runFile},
		{"--raw", "validate", "--plugins", runFile},
		{"run", runFile},
		{"run", "--json", runFile},
	} {
		t.Run(strings.Join(args[:len(args)-1], " "), func(t *testing.T) {
			r, done := obversaWithin(t, dir, 60*time.Second, args...)
			if !done {
				t.Fatalf("did not end in 60 s")
			}
			out := r.stdout + r.stderr
			if r.code != exitUsage {
				t.Errorf("exit %d, want %d:\n%.2000s", r.code, exitUsage, out)
			}
			if strings.Contains(out, "\x1b") || strings.Contains(out, "\x07") {
				t.Errorf("output holds the plugin's escape sequence raw:\n%q", out[:min(len(out), 2000)])
			}
			if !strings.Contains(strings.ReplaceAll(out, `\"`, `"`), more) {
				t.Errorf("output does not say %q:\n%.2000s", more, out)
			}
			if n := strings.Count(out, "bad "); n > validate.MaxPluginDiagnostics+1 {
				t.Errorf("output shows %d of the plugin's diagnostics, want at most %d", n, validate.MaxPluginDiagnostics)
			}
			if len(out) > 4<<20 {
				t.Errorf("output is %d bytes, want the diagnostics' text bounded", len(out))
			}
			if args[len(args)-2] == "--json" {
				var v struct {
					Diagnostics []json.RawMessage `json:"diagnostics"`
				}
				if err := json.Unmarshal([]byte(strings.TrimSpace(r.stdout)), &v); err != nil {
					t.Fatalf("--json output is not one JSON object: %v\n%.2000s", err, r.stdout)
				}
				if !strings.Contains(r.stdout, `"omitted":99900`) {
					t.Errorf("--json output does not count the omitted diagnostics (\"omitted\":99900):\n%.2000s", r.stdout)
				}
			}
		})
	}
}

// TestPluginDescribeEscaped: what a plugin's Describe answers is escaped
// by plugin describe, with --raw too: a version holding a control
// character is printed quoted, with Go's escapes (lineText).
func TestPluginDescribeEscaped(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// A script, as describe passes only the allow-listed environment.
	script := filepath.Join(dir, "plugin.sh")
	text := "#!/bin/sh\nexport OBVERSA_TEST_HELPER=diag-flood\nexec " + testBinary(t) + " \"$@\"\n"
	if err := os.WriteFile(script, []byte(text), 0o755); err != nil {
		t.Fatal(err)
	}
	r := obversa(t, dir, "--raw", "plugin", "describe", script)
	if r.code != 0 || !strings.Contains(r.stdout, `version:         "0.1.0\x1b]52;c;aGk=\a"`) || strings.Contains(r.stdout+r.stderr, "\x1b") {
		t.Errorf("exit %d, want 0 and the version quoted with its escape shown as \\x1b:\n%q\n%s", r.code, r.stdout, r.stderr)
	}
}
