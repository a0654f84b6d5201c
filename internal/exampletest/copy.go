package exampletest

import (
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/obversa/obversa/internal/testutil"
)

// Bundled builds obversa and the named plugins into dir, as release
// binaries: what a TestMain of an example runs its run file with. A
// bundled plugin is named ("mock-engine", "cmd-engine"); another is given
// by its package path ("./examples/plugins/guard") and named for its last
// element. The error carries the compiler's output.
func Bundled(dir string, plugins ...string) error {
	pkgs := map[string]string{"obversa": "./cmd/obversa"}
	for _, p := range plugins {
		if strings.HasPrefix(p, "./") {
			pkgs[path.Base(p)] = p
		} else {
			pkgs[p] = "./plugins/" + p
		}
	}
	return testutil.BuildBinaries(dir, pkgs)
}

// BundledMain is the TestMain of an example run file: it builds obversa
// and plugins (as Bundled does) into a fresh temporary directory, sets
// *binDir to it, runs m and removes the directory. It returns the exit
// status for os.Exit.
func BundledMain(m *testing.M, binDir *string, plugins ...string) int {
	dir, err := os.MkdirTemp("", "obversa-example-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	*binDir = dir
	if err := Bundled(dir, plugins...); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// RunCopy runs an example as a user would, from a copy: the run.hcl of
// the working directory (the example's directory, where `go test` runs
// it) with its "../../bin/" plugin paths pointed at binDir, and the named
// files or directories beside it, go into a fresh directory; obversa pins
// the plugins and runs the file with --json --run-id example. It returns
// that directory, the run's exit status, stdout and stderr; it fails t
// when copying or pinning fails.
func RunCopy(t testing.TB, binDir string, files ...string) (work string, code int, stdout, stderr string) {
	t.Helper()
	work = t.TempDir()
	if len(files) > 0 {
		if out, err := exec.Command("cp", append(append([]string{"-R"}, files...), work)...).CombinedOutput(); err != nil {
			t.Fatalf("cp %v: %v %s", files, err, out)
		}
	}
	src, err := os.ReadFile("run.hcl")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(src), `"../../bin/`) {
		t.Fatal(`run.hcl names no plugin under "../../bin/"`)
	}
	runFile := filepath.Join(work, "run.hcl")
	if err := os.WriteFile(runFile, []byte(strings.ReplaceAll(string(src), `"../../bin/`, `"`+binDir+"/")), 0o644); err != nil {
		t.Fatal(err)
	}
	obversa := filepath.Join(binDir, "obversa")
	if code, _, stderr := Obversa(t, obversa, work, "plugin", "lock", runFile); code != 0 {
		t.Fatalf("plugin lock: exit %d: %s", code, stderr)
	}
	code, stdout, stderr = Obversa(t, obversa, work, "run", "--json", "--run-id", "example", runFile)
	return work, code, stdout, stderr
}
