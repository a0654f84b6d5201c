// Package exampletest holds what the tests of the example plugins and run
// files share: the repository's root, building binaries, running the
// obversa CLI as a user does, launching a plugin as the host does, and
// skipping a test whose runtime is missing — or failing it where CI says the
// runtime must be there. Only tests import it.
package exampletest

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

	"github.com/hashicorp/go-hclog"

	"github.com/obversa/obversa/internal/testutil"
	"github.com/obversa/obversa/plugin"
	"github.com/obversa/obversa/plugin/pluginhost"
)

// RepoRoot returns the module root: the nearest directory above the working
// directory that holds go.mod.
func RepoRoot() (string, error) { return testutil.ModuleRoot() }

// RunAll runs each command in dir and returns the first failure with the
// command's combined output.
func RunAll(dir string, cmds ...*exec.Cmd) error {
	for _, cmd := range cmds {
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("%v: %v\n%s", cmd.Args, err, out)
		}
	}
	return nil
}

// Runtime is a language runtime a test needs. Missing says why it is not
// usable ("" when it is); RequireEnv names the variable that, when set (CI
// sets it), turns a missing runtime into a failure instead of a skip.
type Runtime struct {
	Missing    string
	RequireEnv string
}

// Need skips t, or fails it when r.RequireEnv is set, if the runtime is
// missing.
func (r Runtime) Need(t testing.TB) {
	t.Helper()
	if r.Missing == "" {
		return
	}
	if os.Getenv(r.RequireEnv) != "" {
		t.Fatalf("%s, and %s is set", r.Missing, r.RequireEnv)
	}
	t.Skipf("%s (set %s to make this a failure)", r.Missing, r.RequireEnv)
}

// Example is the setting of an example plugin's tests, filled by Main.
type Example struct {
	// Root is the module root; PluginDir the plugin's directory
	// (examples/plugins/NAME); BinDir a temporary directory for the obversa
	// binary and the plugin's launcher, removed when the tests end.
	Root, PluginDir, BinDir string
	// Name is the plugin's directory name, and its launcher's.
	Name string
	// Runtime is the plugin's language runtime.
	Runtime
}

// Obversa is the obversa binary Main built.
func (e *Example) Obversa() string { return filepath.Join(e.BinDir, "obversa") }

// Launcher is where Main's build command must write the plugin's launcher.
func (e *Example) Launcher() string { return filepath.Join(e.BinDir, e.Name) }

// Main runs the tests m of the example plugin examples/plugins/NAME (e.Name):
// it fills e, sets e.Missing to what missing returns ("" when the runtime is
// usable) and, when the runtime is usable, builds obversa into e.BinDir and
// runs the command build returns (in e.Root), which writes e.Launcher(). It
// returns the exit status for os.Exit.
func Main(m *testing.M, e *Example, missing func() string, build func() *exec.Cmd) int {
	var err error
	if e.Root, err = RepoRoot(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	e.PluginDir = filepath.Join(e.Root, "examples", "plugins", e.Name)
	if e.BinDir, err = os.MkdirTemp("", "obversa-"+e.Name+"-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(e.BinDir)
	if e.Missing = missing(); e.Missing == "" {
		obversa := exec.Command("go", "build", "-o", e.Obversa(), "./cmd/obversa")
		obversa.Env = append(os.Environ(), testutil.StaticEnv)
		err := RunAll(e.Root, obversa, build())
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	return m.Run()
}

// Obversa runs the obversa binary bin in dir with args and returns its exit
// status, stdout and stderr.
func Obversa(t testing.TB, bin, dir string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
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

// RunResult is what `obversa run --json` prints for a run, and where the
// run's record is.
type RunResult struct {
	RunID  string `json:"run_id"`
	Kind   string `json:"kind"`
	Code   string `json:"code"`
	Output struct {
		Nodes map[string]string `json:"nodes"`
	} `json:"output"`
	// Dir is the run's directory in the storage; Stderr what run printed
	// there.
	Dir    string `json:"-"`
	Stderr string `json:"-"`
}

// PrepareExample copies the run file runHCL into a fresh directory with
// the plugin path pluginPath (as the file spells it, quoted) replaced by
// launcher and each edit applied to its text, and pins it (obversa plugin
// lock) with the obversa binary bin. It returns the copy's path, and fails
// t when the file does not name pluginPath or locking fails.
func PrepareExample(t testing.TB, bin, runHCL, pluginPath, launcher string, edits ...func(string) string) string {
	t.Helper()
	src, err := os.ReadFile(runHCL)
	if err != nil {
		t.Fatal(err)
	}
	quoted := fmt.Sprintf("%q", pluginPath)
	if !bytes.Contains(src, []byte(quoted)) {
		t.Fatalf("%s names no plugin path %s", runHCL, quoted)
	}
	text := strings.ReplaceAll(string(src), quoted, fmt.Sprintf("%q", launcher))
	for _, edit := range edits {
		text = edit(text)
	}
	runFile := filepath.Join(t.TempDir(), "run.hcl")
	if err := os.WriteFile(runFile, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := Obversa(t, bin, filepath.Dir(runFile), "plugin", "lock", runFile); code != 0 {
		t.Fatalf("plugin lock: exit %d: %s", code, stderr)
	}
	return runFile
}

// RunExample prepares runHCL as PrepareExample does and runs it (obversa
// run --json --run-id example). It fails t when run prints no result
// object.
func RunExample(t testing.TB, bin, runHCL, pluginPath, launcher string) RunResult {
	t.Helper()
	runFile := PrepareExample(t, bin, runHCL, pluginPath, launcher)
	dir := filepath.Dir(runFile)
	code, stdout, stderr := Obversa(t, bin, dir, "run", "--json", "--run-id", "example", runFile)
	var res RunResult
	if err := json.Unmarshal([]byte(strings.TrimSpace(stdout)), &res); err != nil {
		t.Fatalf("run --json printed %q (exit %d, stderr %s): %v", stdout, code, stderr, err)
	}
	res.Dir = filepath.Join(dir, ".obversa", "default", "runs", "example")
	res.Stderr = stderr
	return res
}

// Launch starts the plugin binary at path as the host does (its digest
// pinned, the host's handshake and mTLS), as an engine named name, logging
// into logs, with PATH and env as its environment. Its handshake is
// bounded as the host's is by default (plugin.DefaultStartTimeout), not
// tighter: an interpreter starting slowly on a loaded machine is not the
// plugin's fault.
func Launch(name, path string, logs io.Writer, env ...string) (*plugin.Client, error) {
	sum, err := plugin.FileSHA256(path)
	if err != nil {
		return nil, err
	}
	return pluginhost.Launch(context.Background(), plugin.LaunchConfig{
		Name: name, Type: plugin.TypeEngine, Path: path, SHA256: sum,
		Env:    append([]string{"PATH=" + os.Getenv("PATH")}, env...),
		Logger: hclog.New(&hclog.LoggerOptions{Output: logs, Level: hclog.Debug}),
	})
}

// Refusal is a change to a launcher's manifest and the message the
// changed launcher must stop with: Entry is a regular expression matching a
// manifest entry, Replacement what it becomes.
type Refusal struct {
	Name, Entry, Replacement, Want string
}

// CheckRefusals writes a copy of the launcher at path changed as each
// refusal says, launches it as the host does, and checks that it stops
// before its handshake (plugin.ErrHandshake) with the refusal's message in
// the plugin's log.
func CheckRefusals(t *testing.T, path string, refusals []Refusal) {
	t.Helper()
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range refusals {
		t.Run(tt.Name, func(t *testing.T) {
			re := regexp.MustCompile(tt.Entry)
			if !re.Match(orig) {
				t.Fatalf("launcher has no manifest entry matching %s", tt.Entry)
			}
			changed := filepath.Join(t.TempDir(), filepath.Base(path))
			if err := os.WriteFile(changed, re.ReplaceAll(orig, []byte(tt.Replacement)), 0o755); err != nil {
				t.Fatal(err)
			}
			var logs testutil.SyncBuffer
			c, err := Launch("example", changed, &logs)
			if err == nil {
				c.Close()
				t.Fatal("the launcher started the plugin")
			}
			if !errors.Is(err, plugin.ErrHandshake) || !strings.Contains(logs.String(), tt.Want) {
				t.Errorf("launch error %v; host log:\n%s\nwant ErrHandshake and %q", err, logs.String(), tt.Want)
			}
		})
	}
}
