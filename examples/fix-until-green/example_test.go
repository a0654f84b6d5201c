// Package fixuntilgreen_test runs the fix-until-green example with the
// real binaries: fix.sh edits a Go package once per round from the last
// failed `go test`, until the tests pass in round 3.
package fixuntilgreen_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/obversa/obversa/internal/exampletest"
	"github.com/obversa/obversa/internal/testutil"
)

var binDir string

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "obversa-fix-until-green-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	binDir = dir
	if err := testutil.BuildBinaries(dir, map[string]string{"obversa": "./cmd/obversa", "cmd-engine": "./plugins/cmd-engine"}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

func TestFixUntilGreen(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Fatalf("the review runs go test: %v", err)
	}
	work := t.TempDir()
	// The example's files, as a user has them: the run file with the
	// built plugin, the author script and the package to fix.
	if out, err := exec.Command("cp", "-R", "fix.sh", "testdata", work).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	src, err := os.ReadFile("run.hcl")
	if err != nil {
		t.Fatal(err)
	}
	runFile := filepath.Join(work, "run.hcl")
	if err := os.WriteFile(runFile, []byte(strings.ReplaceAll(string(src), `"../../bin/`, `"`+binDir+`/`)), 0o644); err != nil {
		t.Fatal(err)
	}
	obversa := filepath.Join(binDir, "obversa")
	if code, _, stderr := exampletest.Obversa(t, obversa, work, "plugin", "lock", runFile); code != 0 {
		t.Fatalf("plugin lock: exit %d: %s", code, stderr)
	}
	code, stdout, stderr := exampletest.Obversa(t, obversa, work, "run", "--json", "--run-id", "example", runFile)
	var res struct {
		Kind string `json:"kind"`
	}
	if err := json.Unmarshal([]byte(stdout), &res); err != nil || code != 0 || res.Kind != "complete" {
		t.Fatalf("run: exit %d, %v: %s\n%s", code, err, stdout, stderr)
	}
	runDir := filepath.Join(work, ".obversa", "default", "runs", "example")
	_, events, _ := exampletest.Obversa(t, obversa, work, "events", runDir)
	for _, want := range []string{
		"green round 1: test says fail",
		"--- FAIL: TestAdd",
		"green round 2: test says fail",
		"--- FAIL: TestMul",
		"green round 3: test says pass",
		"green: passed in round 3",
	} {
		if !strings.Contains(events, want) {
			t.Errorf("the events lack %q:\n%s", want, events)
		}
	}
	// The edited package passes its own tests, outside the run too.
	cmd := exec.Command("go", "test", "./...")
	cmd.Dir = filepath.Join(work, "work")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("go test in the edited package: %v\n%s", err, out)
	}
	if b, _ := os.ReadFile(filepath.Join(work, "testdata", "calc", "calc.go")); !strings.Contains(string(b), "return a - b") {
		t.Error("the run edited the pristine copy in testdata")
	}
}
