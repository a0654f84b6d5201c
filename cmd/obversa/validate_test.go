package main

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestWorkspaceRootOutside: a workspace root outside the run file's
// directory is a warning from validate and run, with its place, unless
// allow_outside = true; the run still runs.
func TestWorkspaceRootOutside(t *testing.T) {
	t.Parallel()
	const warning = "warning: Workspace root is outside the run file's directory"
	for _, allow := range []bool{false, true} {
		block := "workspace {\n  root = \"..\"\n}\n"
		if allow {
			block = "workspace {\n  root = \"..\"\n  allow_outside = true\n}\n"
		}
		runFile := writeRunFile(t, block+jsonRunFile)
		dir := filepath.Dir(runFile)
		v := obversa(t, dir, "validate", runFile)
		r, res := runJSON(t, runFile, "--run-id", "w")
		if v.code != 0 || r.code != 0 || res["kind"] != "complete" {
			t.Fatalf("allow_outside %v: validate exit %d, run exit %d %v:\n%s%s", allow, v.code, r.code, res, v.stderr, r.stderr)
		}
		for name, stderr := range map[string]string{"validate": v.stderr, "run": r.stderr} {
			if got := strings.Contains(stderr, runFile+":2:10: "+warning); got == allow {
				t.Errorf("allow_outside %v: %s warned %v:\n%s", allow, name, got, stderr)
			}
		}
		if allow {
			continue
		}
		vj := oneObject(t, obversa(t, dir, "validate", "--json", runFile))
		if ds, _ := vj["diagnostics"].([]any); len(ds) != 1 || ds[0].(map[string]any)["severity"] != "warning" {
			t.Errorf("validate --json: %v", vj)
		}
	}
}

// TestWorkspaceRootMissing: validate refuses a workspace root that does
// not exist, at its place, before anything runs.
func TestWorkspaceRootMissing(t *testing.T) {
	t.Parallel()
	runFile := writeRunFile(t, "workspace {\n  root = \"gone\"\n}\n"+jsonRunFile)
	wantStderr(t, obversa(t, filepath.Dir(runFile), "validate", runFile), exitUsage, runFile+":2:10: error: Workspace root does not exist")
	if err := os.Mkdir(filepath.Join(filepath.Dir(runFile), "gone"), 0o755); err != nil {
		t.Fatal(err)
	}
	if r := obversa(t, filepath.Dir(runFile), "validate", runFile); r.code != 0 {
		t.Fatalf("validate after creating the root: exit %d: %s", r.code, r.stderr)
	}
}

// validateCase is a directory holding run.hcl, bin/mock-engine and
// whatever a case adds, checked by `obversa validate` from inside it.
type validateCase struct {
	name    string
	top     string                         // run-file attributes before the plugin block
	plugin  string                         // the plugin block's attributes after type and path
	path    string                         // the plugin path; default bin/mock-engine
	node    bool                           // declare the plugin as a node binding, used by a node
	lock    bool                           // pin with plugin lock first
	setup   func(t *testing.T, dir string) // before the lock
	after   func(t *testing.T, dir string) // after the lock
	plugins bool                           // --plugins
	exit    int
}

// validateRunFile has one plugin: an engine used by a lane, or with node
// a node binding used by a node.
func (c validateCase) runFile() string {
	path := c.path
	if path == "" {
		path = "bin/mock-engine"
	}
	if c.top != "" {
		return c.top + "\n" + validateCase{plugin: c.plugin, path: c.path, node: c.node}.runFile()
	}
	if c.node {
		return "plugin \"mock\" {\n  type = \"node\"\n  path = \"" + path + "\"\n  " + c.plugin + "\n}\n" +
			"graph \"dag\" {\n  node \"a\" {\n    binding = \"mock\"\n  }\n}\n"
	}
	return "plugin \"mock\" {\n  type = \"engine\"\n  path = \"" + path + "\"\n  " + c.plugin + "\n}\n" + `lane "w" {
  requested = { adapter = "mock", provider = "local", model_family = "scripted", model = "m1", tools = [] }
}
graph "dag" {
  node "a" {
    lane   = "w"
    prompt = "hi"
  }
}
`
}

// TestValidateChecks runs validate on one mistake each and compares what
// it prints with testdata/validate/<case>.golden: every diagnostic has its
// place and its fix; the exit status is 2 for errors, 0 with warnings
// only; nothing is written. The comparison ignores how lines wrap, and
// the test's directories and the digests of its binaries are replaced by
// names.
func TestValidateChecks(t *testing.T) {
	t.Parallel()
	mock, err := fileSHA256(filepath.Join(binDir, "mock-engine"))
	if err != nil {
		t.Fatal(err)
	}
	cmdEngine, err := fileSHA256(filepath.Join(binDir, "cmd-engine"))
	if err != nil {
		t.Fatal(err)
	}
	zero := strings.Repeat("0", 64)
	tests := []validateCase{
		{name: "valid", lock: true, plugins: true},
		{name: "unpinned", exit: 0},
		{name: "digest_differs_from_lock", lock: true, exit: exitUsage, after: func(t *testing.T, dir string) {
			copyBinary(t, filepath.Join(binDir, "cmd-engine"), filepath.Join(dir, "bin", "mock-engine"))
		}},
		{name: "digest_differs_from_sha256", plugin: `sha256 = "` + zero + `"`, exit: exitUsage},
		{name: "signature_file", path: "bin/mock-engine.minisig", plugin: `sha256 = "` + zero + `"`, exit: exitUsage, setup: func(t *testing.T, dir string) {
			copyBinary(t, filepath.Join(binDir, "mock-engine"), filepath.Join(dir, "bin", "mock-engine.minisig"))
		}},
		{name: "unsigned_with_trusted_keys", exit: exitUsage, plugin: `sha256 = "` + mock + `"
  trusted_keys = ["keys/release.pub"]`, setup: func(t *testing.T, dir string) {
			keygen(t, filepath.Join(dir, "keys"), "release")
		}},
		// Unpinned and unsigned under trusted_keys: `run --lock` and
		// `plugin lock` refuse to pin it, as validate does.
		{name: "unsigned_unpinned_with_trusted_keys", exit: exitUsage, plugin: `trusted_keys = ["keys/release.pub"]`, setup: func(t *testing.T, dir string) {
			keygen(t, filepath.Join(dir, "keys"), "release")
		}},
		{name: "unsigned_unpinned_with_run_trusted_keys", exit: exitUsage, top: `trusted_keys = ["keys/release.pub"]`, setup: func(t *testing.T, dir string) {
			keygen(t, filepath.Join(dir, "keys"), "release")
		}},
		// Unpinned and signed by a trusted key: `run --lock` would pin it,
		// so validate only warns that it is unpinned.
		{name: "signed_unpinned_with_trusted_keys", exit: 0, plugin: `trusted_keys = ["keys/release.pub"]`, setup: func(t *testing.T, dir string) {
			keygen(t, filepath.Join(dir, "keys"), "release")
			signBin(t, dir, filepath.Join(dir, "keys", "release.key"), filepath.Join(dir, "bin", "mock-engine"))
		}},
		{name: "trusted_key_missing", exit: exitUsage, plugin: `sha256 = "` + mock + `"
  trusted_keys = ["keys/none.pub"]`},
		{name: "trusted_key_missing_unpinned", exit: exitUsage, plugin: `trusted_keys = ["keys/none.pub"]`},
		{name: "config_unknown_key", lock: true, plugins: true, exit: exitUsage, plugin: `config = {
    efects_file = "effects.log"
  }`},
		{name: "config_nested", lock: true, plugins: true, exit: exitUsage, plugin: `config = {
    responses = [
      { text = "ok" },
      { fail = { kind = "ratelimit", message = "slow down" } },
    ]
  }`},
		{name: "config_unchecked_without_plugins", lock: true, exit: 0, plugin: `config = {
    efects_file = "effects.log"
  }`},
		{name: "wrong_type", node: true, lock: true, plugins: true, exit: exitUsage},
		{name: "plugin_fails_to_start", path: "bin/broken", lock: true, plugins: true, exit: exitUsage, setup: func(t *testing.T, dir string) {
			if err := os.WriteFile(filepath.Join(dir, "bin", "broken"), []byte("#!/bin/sh\necho 'cannot find my model' >&2\nexit 3\n"), 0o755); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			copyBinary(t, filepath.Join(binDir, "mock-engine"), filepath.Join(dir, "bin", "mock-engine"))
			if err := os.WriteFile(filepath.Join(dir, "run.hcl"), []byte(tt.runFile()), 0o644); err != nil {
				t.Fatal(err)
			}
			if tt.setup != nil {
				tt.setup(t, dir)
			}
			if tt.lock {
				if r := obversa(t, dir, "plugin", "lock", "run.hcl"); r.code != 0 {
					t.Fatalf("lock: exit %d: %s", r.code, r.stderr)
				}
			}
			if tt.after != nil {
				tt.after(t, dir)
			}
			before := listDir(t, dir)
			args := []string{"validate"}
			if tt.plugins {
				args = append(args, "--plugins")
			}
			r := obversa(t, dir, append(args, "run.hcl")...)
			if r.code != tt.exit {
				t.Fatalf("exit %d, want %d:\n%s%s", r.code, tt.exit, r.stdout, r.stderr)
			}
			if after := listDir(t, dir); !slices.Equal(before, after) {
				t.Errorf("validate changed the directory: %v → %v", before, after)
			}
			names := strings.NewReplacer(dir, "<dir>", mock, "<sha256 of mock-engine>", cmdEngine, "<sha256 of cmd-engine>")
			got := regexp.MustCompile(`/tmp/obversa-validate-[0-9]+`).ReplaceAllString(names.Replace(r.stdout+r.stderr), "<validate cache>")
			goldenText(t, filepath.Join("testdata", "validate", tt.name+".golden"), got)
		})
	}
}

// goldenText compares text with a golden file, or rewrites it under
// -update, ignoring how lines wrap: runs of white space compare equal.
func goldenText(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if strings.Join(strings.Fields(string(want)), " ") != strings.Join(strings.Fields(got), " ") {
		t.Errorf("%s differs (beyond line wrapping); want:\n%s\ngot:\n%s", path, want, got)
	}
}

// listDir lists the names under dir, recursively.
func listDir(t *testing.T, dir string) []string {
	t.Helper()
	var names []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		names = append(names, rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// fileSHA256 is the SHA-256 of a file in hex.
func fileSHA256(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// TestRunRefusesConfigAtItsPlace: a config the plugin's Configure rejects
// refuses the run (exit 2, nothing created) with the diagnostic at the
// config key it names, as validate --plugins shows it.
func TestRunRefusesConfigAtItsPlace(t *testing.T) {
	t.Parallel()
	c := validateCase{plugin: "config = {\n    default = { delay = \"-1s\" }\n  }"}
	runFile := writeRunFile(t, strings.Replace(c.runFile(), "bin/mock-engine", "BIN/mock-engine", 1))
	dir := filepath.Dir(runFile)
	if r := obversa(t, dir, "plugin", "lock", runFile); r.code != 0 {
		t.Fatalf("lock: %s", r.stderr)
	}
	r := obversa(t, dir, "run", runFile)
	wantStderr(t, r, exitUsage, runFile+":5:17: error: ", `"-1s" is not`, "config.default.delay")
	noRunDir(t, dir)
	obj := refusalOf(t, dir, exitUsage, CodeRunFileInvalid, "run", "--json", runFile)
	if ds := obj["diagnostics"].([]any); len(ds) != 1 {
		t.Errorf("refusal diagnostics %v", ds)
	}
}
