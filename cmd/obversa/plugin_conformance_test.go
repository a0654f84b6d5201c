package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/obversa/obversa/plugin"
	"github.com/obversa/obversa/sdk/conformance"
)

func TestPluginConformanceMockEngineJSON(t *testing.T) {
	t.Parallel()
	res := obversa(t, t.TempDir(), "plugin", "conformance", "--json", filepath.Join(binDir, "mock-engine"))
	if res.code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", res.code, res.stdout, res.stderr)
	}
	var rep conformance.Report
	if err := json.Unmarshal([]byte(res.stdout), &rep); err != nil {
		t.Fatalf("report is not JSON: %v\n%s", err, res.stdout)
	}
	want := len(conformance.CasesFor(plugin.TypeEngine))
	if len(rep.Results) != want || rep.Failed() || rep.Count(conformance.Skip) != 0 {
		t.Errorf("report: %d results, %d failed, %d skipped; want %d passed", len(rep.Results),
			rep.Count(conformance.Fail), rep.Count(conformance.Skip), want)
	}
}

func TestPluginConformanceCmdEngineTable(t *testing.T) {
	t.Parallel()
	res := obversa(t, t.TempDir(), "plugin", "conformance",
		"--config", filepath.Join(repoRoot, "plugins/cmd-engine/testdata/conformance.json"),
		filepath.Join(binDir, "cmd-engine"))
	if res.code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", res.code, res.stdout, res.stderr)
	}
	for _, want := range []string{"plugin cmd 0.1.0 (engine)", "scenario control: requests", "CASE", "EXPECTED", "SEEN",
		"run.cancel", "robust.panic          SKIP", "22 passed, 0 failed, 1 skipped"} {
		if !strings.Contains(res.stdout, want) {
			t.Errorf("table lacks %q:\n%s", want, res.stdout)
		}
	}
}

func TestPluginConformanceFailure(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "conformance.json")
	if err := os.WriteFile(cfg, []byte(`{"env": {"OBVERSA_TEST_HELPER": "stdout-noise"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	res := obversa(t, dir, "plugin", "conformance", "--config", cfg, "--case", "handshake.line", testBinary(t))
	if res.code != exitFailed {
		t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", res.code, exitFailed, res.stdout, res.stderr)
	}
	for _, want := range []string{"handshake.line        FAIL", "hello from a plugin that forgot its handshake", "0 passed, 1 failed, 22 skipped"} {
		if !strings.Contains(res.stdout, want) {
			t.Errorf("table lacks %q:\n%s", want, res.stdout)
		}
	}
}

func TestPluginConformanceUsage(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"scenarios": {"explode": {"prompt": "x"}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"missing binary", []string{filepath.Join(dir, "nope")}, "plugin binary not usable"},
		{"not executable", []string{bad}, "not executable"},
		{"bad config", []string{"--config", bad, filepath.Join(binDir, "mock-engine")}, `unknown scenario "explode"`},
		{"unknown case", []string{"--case", "nope", filepath.Join(binDir, "mock-engine")}, `unknown case "nope"`},
		{"no time", []string{"--timeout", "0s", filepath.Join(binDir, "mock-engine")}, `invalid argument "0s" for "--timeout" flag: must be a duration above 0`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := obversa(t, dir, append([]string{"plugin", "conformance"}, tt.args...)...)
			if res.code != exitUsage || !strings.Contains(res.stderr, tt.want) {
				t.Errorf("exit %d, stderr %q; want exit %d and %q", res.code, res.stderr, exitUsage, tt.want)
			}
		})
	}
}
