package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/obversa/obversa/plugin"
)

// oneObject decodes stdout as exactly one line holding one JSON object.
func oneObject(t *testing.T, r result) map[string]any {
	t.Helper()
	if strings.Count(r.stdout, "\n") != 1 || !strings.HasSuffix(r.stdout, "\n") {
		t.Fatalf("stdout is not one line (exit %d):\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	var obj map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &obj); err != nil {
		t.Fatalf("stdout is not a JSON object: %v\n%s", err, r.stdout)
	}
	return obj
}

// hasKeys fails unless obj has every key.
func hasKeys(t *testing.T, obj map[string]any, keys ...string) {
	t.Helper()
	for _, k := range keys {
		if _, ok := obj[k]; !ok {
			t.Errorf("object lacks %q: %v", k, obj)
		}
	}
}

// refusalOf checks a --json refusal: exit status exit, one object with
// code, message and a diagnostics list, and the same exit status and a
// message on stderr without --json.
func refusalOf(t *testing.T, dir string, exit int, code string, args ...string) map[string]any {
	t.Helper()
	r := obversa(t, dir, args...)
	if r.code != exit {
		t.Fatalf("%v: exit %d, want %d\n%s%s", args, r.code, exit, r.stdout, r.stderr)
	}
	obj := oneObject(t, r)
	hasKeys(t, obj, "code", "message", "diagnostics")
	if obj["code"] != code {
		t.Errorf("%v: code %v, want %s: %v", args, obj["code"], code, obj)
	}
	if m, _ := obj["message"].(string); m == "" {
		t.Errorf("%v: empty message", args)
	}
	if _, ok := obj["diagnostics"].([]any); !ok {
		t.Errorf("%v: diagnostics is not a list: %v", args, obj["diagnostics"])
	}
	human := obversa(t, dir, slices.DeleteFunc(slices.Clone(args), func(a string) bool { return a == "--json" })...)
	if human.code != exit || human.stderr == "" || human.stdout != "" {
		t.Errorf("%v without --json: exit %d (want %d), stdout %q, stderr %q", args, human.code, exit, human.stdout, human.stderr)
	}
	return obj
}

const jsonRunFile = `
plugin "mock" {
  type = "engine"
  path = "BIN/mock-engine"
}
lane "w" {
  requested = { adapter = "mock", provider = "local", model_family = "scripted", model = "m1", tools = [] }
}
graph "dag" {
  node "a" {
    lane   = "w"
    prompt = "hi"
  }
}
`

// TestJSONRunFileCommands: validate, run, plugin lock, verify and
// preflight print one object per line with --json, refusals included,
// with the exit status of the human form.
func TestJSONRunFileCommands(t *testing.T) {
	t.Parallel()
	runFile := writeRunFile(t, jsonRunFile)
	dir := filepath.Dir(runFile)

	v := oneObject(t, obversa(t, dir, "validate", "--json", runFile))
	if v["valid"] != true || v["nodes"] != float64(1) {
		t.Errorf("validate --json: %v", v)
	}
	refusalOf(t, dir, exitUsage, "PLUGIN_UNPINNED", "run", "--json", runFile)

	lock := oneObject(t, obversa(t, dir, "plugin", "lock", "--json", runFile))
	hasKeys(t, lock, "lock_file", "plugins")
	if ps, _ := lock["plugins"].([]any); len(ps) != 1 || ps[0].(map[string]any)["changed"] != true {
		t.Errorf("plugin lock --json: %v", lock)
	}
	if again := oneObject(t, obversa(t, dir, "plugin", "lock", "--json", runFile)); again["plugins"].([]any)[0].(map[string]any)["changed"] != false {
		t.Errorf("second plugin lock --json: %v", again)
	}

	r := obversa(t, dir, "run", "--json", "--run-id", "j", runFile)
	if res := oneObject(t, r); r.code != 0 || res["kind"] != "complete" {
		t.Fatalf("run --json: exit %d: %v", r.code, res)
	}
	runDir := runDirOf(runFile, "j")
	ver := oneObject(t, obversa(t, dir, "verify", "--json", runDir))
	hasKeys(t, ver, "dir", "ok", "events", "artifacts", "faults")
	if ver["ok"] != true {
		t.Errorf("verify --json: %v", ver)
	}
	pf := oneObject(t, obversa(t, dir, "preflight", "--json", runDir))
	hasKeys(t, pf, "phase")

	refusalOf(t, dir, exitUsage, "RUN_EXISTS", "run", "--json", "--run-id", "j", runFile)
	refusalOf(t, dir, exitUsage, "RUN_NOT_FOUND", "verify", "--json", "no-such-run")
	refusalOf(t, dir, exitUsage, "RUN_NOT_FOUND", "verify", "--json", filepath.Join(dir, "no-such-run"))
	refusalOf(t, dir, exitUsage, CodeUsage, "validate", "--json", "--no-such-flag", runFile)
}

// TestJSONDiagnostics: a run file with a mistake is refused by validate,
// run and plugin lock with its diagnostics in the refusal object; without
// --json each diagnostic is printed once, without a trailing "Error:" line.
func TestJSONDiagnostics(t *testing.T) {
	t.Parallel()
	runFile := writeRunFile(t, strings.Replace(jsonRunFile, `lane   = "w"`, `lane   = "ww"`, 1))
	dir := filepath.Dir(runFile)
	for _, args := range [][]string{{"validate"}, {"run"}, {"plugin", "lock"}} {
		obj := refusalOf(t, dir, exitUsage, CodeRunFileInvalid, append(args, "--json", runFile)...)
		diags := obj["diagnostics"].([]any)
		if len(diags) != 1 {
			t.Fatalf("%v: diagnostics %v", args, diags)
		}
		d := diags[0].(map[string]any)
		rng, _ := d["range"].(map[string]any)
		start, _ := rng["start"].(map[string]any)
		if d["severity"] != "error" || d["summary"] != `Unknown lane "ww"` || !strings.Contains(d["detail"].(string), `Did you mean "w"?`) ||
			rng["filename"] != runFile || start["line"] != float64(11) || start["column"] != float64(14) {
			t.Errorf("%v: diagnostic %v", args, d)
		}
		if m := obj["message"].(string); !strings.HasPrefix(m, runFile+":11:14: ") {
			t.Errorf("%v: message %q does not start at the place", args, m)
		}
		human := obversa(t, dir, append(args, runFile)...)
		if n := strings.Count(human.stderr, `Unknown lane "ww"`); n != 1 || strings.Contains(human.stderr, "Error:") {
			t.Errorf("%v: the diagnostic is printed %d times:\n%s", args, n, human.stderr)
		}
	}
}

// TestJSONPluginCommands: keygen, hash, sign, verify, describe and install
// print one object with --json, and refuse with a refusal object.
func TestJSONPluginCommands(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	kg := oneObject(t, obversa(t, work, "plugin", "keygen", "--json"))
	hasKeys(t, kg, "key_id", "secret_key", "public_key", "public", "encrypted")
	pub, _ := kg["public"].(string)
	refusalOf(t, work, exitUsage, CodeUsage, "plugin", "keygen", "--json")

	bin := filepath.Join(work, "dist", "obversa-plugin-cmd")
	copyBinary(t, filepath.Join(binDir, "cmd-engine"), bin)
	h := oneObject(t, obversa(t, work, "plugin", "hash", "--json", bin))
	sum, _ := plugin.FileSHA256(bin)
	if h["sha256"] != sum || h["path"] != bin {
		t.Errorf("hash --json: %v", h)
	}
	refusalOf(t, work, exitUsage, CodeUsage, "plugin", "hash", "--json", filepath.Join(work, "nothing"))

	sg := oneObject(t, obversa(t, work, "plugin", "sign", "--json", bin))
	if sg["name"] != "cmd" || sg["sha256"] != sum || sg["signature"] != bin+plugin.SignatureSuffix || sg["key_id"] != kg["key_id"] {
		t.Errorf("sign --json: %v", sg)
	}
	vf := oneObject(t, obversa(t, work, "plugin", "verify", "--json", bin))
	if vf["key_id"] != kg["key_id"] || vf["sha256"] != sum {
		t.Errorf("verify --json: %v", vf)
	}
	other := filepath.Join(work, "other")
	copyBinary(t, filepath.Join(binDir, "mock-engine"), other)
	if err := os.WriteFile(other+plugin.SignatureSuffix, mustRead(t, bin+plugin.SignatureSuffix), 0o644); err != nil {
		t.Fatal(err)
	}
	refusalOf(t, work, exitFailed, plugin.CodeUntrusted, "plugin", "verify", "--json", other)

	ds := oneObject(t, obversa(t, work, "plugin", "describe", "--json", bin))
	hasKeys(t, ds, "path", "sha256", "protocol", "description")

	archive := filepath.Join(work, "cmd_0.1.0_linux_amd64.tar.gz")
	writeRelease(t, archive, "cmd_0.1.0", bin, bin+plugin.SignatureSuffix)
	plugins := filepath.Join(work, "plugins")
	in := oneObject(t, obversa(t, work, "plugin", "install", "--json", "--key", pub, "--dir", plugins, archive))
	if in["name"] != "cmd" || in["key_id"] != kg["key_id"] || in["already_installed"] != false || !strings.Contains(in["block"].(string), `plugin "cmd" {`) {
		t.Errorf("install --json: %v", in)
	}
	if again := oneObject(t, obversa(t, work, "plugin", "install", "--json", "--key", pub, "--dir", plugins, archive)); again["already_installed"] != true {
		t.Errorf("second install --json: %v", again)
	}
	refusalOf(t, work, exitUsage, "PLUGIN_INSTALL", "plugin", "install", "--json", "--key", pub, "--dir", plugins, bin)
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestJSONRefusalCodes: a run refused before it starts names why in the
// refusal object's code.
func TestJSONRefusalCodes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, code string
		prepare    func(t *testing.T, dir string)
		mention    []string // in the message
	}{
		{name: "binary swapped after lock", code: "PLUGIN_DIGEST_MISMATCH", prepare: func(t *testing.T, dir string) {
			copyBinary(t, filepath.Join(binDir, "cmd-engine"), filepath.Join(dir, "bin", "mock-engine"))
		}},
		{name: "plugin fails its handshake", code: "PLUGIN_HANDSHAKE", prepare: func(t *testing.T, dir string) {
			if err := os.WriteFile(filepath.Join(dir, "bin", "mock-engine"), []byte("#!/bin/sh\nexit 7\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			if r := obversa(t, dir, "plugin", "lock", "--upgrade", "run.hcl"); r.code != 0 {
				t.Fatalf("lock: %s", r.stderr)
			}
		}, mention: []string{"bin/mock-engine (executed as its verified copy ", "check that the path names an Obversa plugin"}},
		{name: "binary removed", code: CodeRunFileInvalid, prepare: func(t *testing.T, dir string) {
			if err := os.Remove(filepath.Join(dir, "bin", "mock-engine")); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			copyBinary(t, filepath.Join(binDir, "mock-engine"), filepath.Join(dir, "bin", "mock-engine"))
			if err := os.WriteFile(filepath.Join(dir, "run.hcl"), []byte(strings.Replace(jsonRunFile, "BIN/mock-engine", "bin/mock-engine", 1)), 0o644); err != nil {
				t.Fatal(err)
			}
			if r := obversa(t, dir, "plugin", "lock", "run.hcl"); r.code != 0 {
				t.Fatalf("lock: %s", r.stderr)
			}
			tt.prepare(t, dir)
			obj := refusalOf(t, dir, exitUsage, tt.code, "run", "--json", "run.hcl")
			for _, m := range tt.mention {
				if msg, _ := obj["message"].(string); !strings.Contains(msg, m) {
					t.Errorf("message lacks %q: %s", m, msg)
				}
			}
		})
	}
}
