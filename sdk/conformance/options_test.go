package conformance_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/obversa/obversa/plugin"
	"github.com/obversa/obversa/sdk/conformance"
)

func TestDecodeOptions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, file string
		want       conformance.Options
		wantErr    string
	}{
		{name: "empty object", file: `{}`},
		{name: "everything", file: `{
			"type": "node", "args": ["-v"], "env": {"K": "{config_dir}/x"}, "pass_env": ["API_KEY"],
			"config": {"command": ["{config_dir}/fake"]}, "invalid_config": [1],
			"target": {"adapter": "a", "provider": "p", "model_family": "f", "model": "m", "tools": ["Read"]},
			"scenarios": {"delay": {"prompt": "wait"}, "failure:rate_limit": {"prompt": "429"}}}`,
			want: conformance.Options{
				Type: plugin.TypeNode, Args: []string{"-v"}, Env: map[string]string{"K": `/dir "q"/x`}, PassEnv: []string{"API_KEY"},
				Config:        json.RawMessage(`{"command": ["/dir \"q\"/fake"]}`),
				InvalidConfig: json.RawMessage(`[1]`),
				Target:        plugin.Identity{Adapter: "a", Provider: "p", ModelFamily: "f", Model: "m", Tools: []string{"Read"}},
				Scenarios:     map[string]conformance.ScenarioRequest{"delay": {Prompt: "wait"}, "failure:rate_limit": {Prompt: "429"}},
			}},
		{name: "not JSON", file: `config = {}`, wantErr: "invalid character"},
		{name: "two values", file: `{} {}`, wantErr: "more than one JSON value"},
		{name: "unknown field", file: `{"cases": []}`, wantErr: `unknown field "cases"`},
		{name: "unknown type", file: `{"type": "tool"}`, wantErr: `type "tool"`},
		{name: "unknown scenario", file: `{"scenarios": {"explode": {"prompt": "x"}}}`, wantErr: `unknown scenario "explode"`},
		{name: "unknown failure kind", file: `{"scenarios": {"failure:oops": {"prompt": "x"}}}`, wantErr: `unknown failure kind "oops"`},
		{name: "empty prompt", file: `{"scenarios": {"delay": {}}}`, wantErr: `scenarios["delay"]: prompt is empty`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := conformance.DecodeOptions([]byte(tt.file), `/dir "q"`)
			if tt.wantErr != "" {
				if !errors.Is(err, conformance.ErrOptions) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want ErrOptions mentioning %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got, cmp.Comparer(jsonEqual)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func jsonEqual(a, b json.RawMessage) bool {
	var x, y bytes.Buffer
	if json.Compact(&x, a) != nil || json.Compact(&y, b) != nil {
		return bytes.Equal(a, b)
	}
	return bytes.Equal(x.Bytes(), y.Bytes())
}

// FuzzDecodeOptions checks that any file is refused with ErrOptions or
// decodes to options whose scenario names all parse.
func FuzzDecodeOptions(f *testing.F) {
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"type":"engine","config":{"a":"{config_dir}"},"scenarios":{"delay":{"prompt":"p"}}}`))
	f.Add([]byte(`{"scenarios":{"failure:auth":{"prompt":"x"}},"env":{"A":"b"},"args":["x"]}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		o, err := conformance.DecodeOptions(data, "/d")
		if err != nil {
			if !errors.Is(err, conformance.ErrOptions) {
				t.Fatalf("error %v does not wrap ErrOptions", err)
			}
			return
		}
		for name, sr := range o.Scenarios {
			if _, err := plugin.ParseScenario(name); err != nil || sr.Prompt == "" {
				t.Fatalf("accepted scenario %q (%+v): %v", name, sr, err)
			}
		}
	})
}

func TestLoadOptionsConfigDir(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "c.json")
	if err := os.WriteFile(path, []byte(`{"args": ["{config_dir}/fake"]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	o, err := conformance.LoadOptions(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{dir + "/fake"}, o.Args); diff != "" {
		t.Errorf("args (-want +got):\n%s", diff)
	}
	if _, err := conformance.LoadOptions(filepath.Join(dir, "missing.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

func TestCheckRefusesToStart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	notExec := filepath.Join(dir, "plain")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		bin  string
		opts conformance.Options
		want error
	}{
		{"missing", filepath.Join(dir, "nope"), conformance.Options{}, conformance.ErrBinary},
		{"directory", dir, conformance.Options{}, conformance.ErrBinary},
		{"not executable", notExec, conformance.Options{}, conformance.ErrBinary},
		{"unknown case", self(t), conformance.Options{Only: []string{"run.everything"}}, conformance.ErrOptions},
		{"bad config JSON", self(t), conformance.Options{Config: json.RawMessage(`{`)}, conformance.ErrOptions},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if _, err := conformance.Check(t.Context(), tt.bin, tt.opts); !errors.Is(err, tt.want) {
				t.Errorf("Check = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestCaseNames(t *testing.T) {
	t.Parallel()
	names := conformance.CaseNames()
	seen := map[string]bool{}
	for i, c := range conformance.Cases() {
		if c.Name != names[i] || c.Expected == "" || seen[c.Name] {
			t.Errorf("case %d: %+v", i, c)
		}
		seen[c.Name] = true
	}
	for _, want := range []string{"handshake.line", "health", "run.cancel", "failures", "robust.host_death"} {
		if !seen[want] {
			t.Errorf("no case %q", want)
		}
	}
}

func TestWriteTable(t *testing.T) {
	t.Parallel()
	rep := &conformance.Report{
		Binary: "/bin/p", SHA256: "ab", Type: "engine", Plugin: "p 1", ScenarioControl: "none",
		Results: []conformance.Result{
			{Case: "health", Status: conformance.Pass, Expected: "SERVING", Seen: "SERVING in 1ms"},
			{Case: "run.cancel", Status: conformance.Skip, Expected: "aborted\nwithin 3 s", Seen: "no scenario control"},
			{Case: "run.parts", Status: conformance.Fail, Expected: "one final", Seen: "2 final parts"},
		},
	}
	var b strings.Builder
	if err := rep.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	want := `plugin p 1 (engine)
binary /bin/p
sha256 ab
scenario control: none

CASE        RESULT  EXPECTED            SEEN
health      PASS    SERVING             SERVING in 1ms
run.cancel  SKIP    aborted within 3 s  no scenario control
run.parts   FAIL    one final           2 final parts

1 passed, 1 failed, 1 skipped
`
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if !rep.Failed() {
		t.Error("Failed() = false")
	}
	if r, ok := rep.Result("run.parts"); !ok || r.Seen != "2 final parts" {
		t.Errorf("Result(run.parts) = %+v, %v", r, ok)
	}
}
