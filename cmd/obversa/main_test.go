package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/obversa/obversa/internal/testutil"
)

// binDir holds obversa, mock-engine, cmd-engine and guard, built once per
// test run by TestMain.
var binDir string

// repoRoot is the module root (two levels up from this package).
var repoRoot string

func TestMain(m *testing.M) {
	if mode := os.Getenv("OBVERSA_TEST_HELPER"); mode != "" {
		os.Exit(helperPlugin(mode))
	}
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	wd, err := os.Getwd()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	repoRoot = filepath.Dir(filepath.Dir(wd))
	dir, err := os.MkdirTemp("", "obversa-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	binDir = dir
	// The crash tests stop processes at failpoints: the binaries are built
	// with them compiled in — except when only benchmarks run, which
	// measure release binaries.
	var tags []string
	if !benchmarksOnly(os.Args) {
		tags = append(tags, testutil.FailpointsTag)
	}
	pkgs := map[string]string{"obversa": "./cmd/obversa", "mock-engine": "./plugins/mock-engine", "cmd-engine": "./plugins/cmd-engine",
		"guard": "./examples/plugins/guard"}
	if err := testutil.BuildBinaries(dir, pkgs, tags...); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer stopBrowser()
	return m.Run()
}

// benchmarksOnly reports whether the test binary was asked to run
// benchmarks and no test (`-run '^$' -bench …`, as make bench does).
func benchmarksOnly(args []string) bool {
	bench, noTests := false, false
	for i, a := range args {
		v, _, _ := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-"), "=")
		val := ""
		if _, after, ok := strings.Cut(a, "="); ok {
			val = after
		} else if i+1 < len(args) {
			val = args[i+1]
		}
		switch v {
		case "test.bench":
			bench = val != ""
		case "test.run":
			noTests = val == "^$"
		}
	}
	return bench && noTests
}

// helperPlugin makes the test binary a misbehaving plugin.
func helperPlugin(mode string) int {
	switch mode {
	case "not-serving", "health-hangs":
		return preflightHelper(mode)
	case "not-serving-in-worker", "dies-in-worker":
		return launchFaultHelper(mode)
	case "stderr-flood":
		return stderrFlood()
	case "daemon-child", "daemon-fork", "daemon-sleep", "daemon-child-bare", "daemon-fork-bare":
		return daemonHelper(mode)
	case "policy-panic", "policy-exit", "policy-hang", "policy-bad-verdict":
		return policyHelper(mode)
	case "describe-hangs", "configure-hangs", "describe-lies":
		return greetHangs(mode)
	case "diag-flood":
		return diagFlood()
	case "stdout-noise":
		fmt.Println("hello from a plugin that forgot its handshake")
		time.Sleep(30 * time.Second)
	}
	return 1
}

// result of one CLI invocation.
type result struct {
	code           int
	stdout, stderr string
}

// obversa runs the built CLI in dir.
func obversa(t testing.TB, dir string, args ...string) result {
	t.Helper()
	return obversaEnv(t, dir, nil, args...)
}

// obversaEnv runs the built CLI in dir with extra environment variables.
func obversaEnv(t testing.TB, dir string, env []string, args ...string) result {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "obversa"), args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	return runResult(t, cmd, fmt.Sprintf("obversa %v", args))
}

// runResult runs cmd to its end and returns its exit code and what it
// printed; a command that could not run at all (what names it) fails t.
func runResult(t testing.TB, cmd *exec.Cmd, what string) result {
	t.Helper()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return result{code: code, stdout: out.String(), stderr: errb.String()}
}

// example copies an example's run file into a temporary directory with the
// plugin paths pointing at the test's binaries and the given replacements
// applied, and returns the run file's path.
func example(t testing.TB, name string, replace ...string) string {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(repoRoot, "examples", name, "run.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	text := strings.ReplaceAll(string(src), `"../../bin/`, `"`+binDir+`/`)
	for i := 0; i+1 < len(replace); i += 2 {
		if !strings.Contains(text, replace[i]) {
			t.Fatalf("example %s has no %q to replace", name, replace[i])
		}
		text = strings.ReplaceAll(text, replace[i], replace[i+1])
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "run.hcl")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// writeRunFile writes a run file into a temporary directory.
func writeRunFile(t *testing.T, text string) string {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "run.hcl")
	text = strings.ReplaceAll(text, "BIN/", binDir+"/")
	text = strings.ReplaceAll(text, "SELF", testBinary(t))
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// rewrite replaces every old in the file at path with new.
func rewrite(t *testing.T, path, old, new string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(strings.ReplaceAll(string(b), old, new)), 0o644); err != nil {
		t.Fatal(err)
	}
}

func testBinary(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}
