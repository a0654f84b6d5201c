// Package fixuntilgreen_test runs the fix-until-green example with the
// real binaries: fix.sh edits a Go package once per round from the last
// failed `go test`, until the tests pass in round 3.
package fixuntilgreen_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/obversa/obversa/internal/exampletest"
)

var binDir string

func TestMain(m *testing.M) {
	os.Exit(exampletest.BundledMain(m, &binDir, "cmd-engine"))
}

func TestFixUntilGreen(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Fatalf("the review runs go test: %v", err)
	}
	// The example's files, as a user has them: the run file, the author
	// script and the package to fix.
	work, code, stdout, stderr := exampletest.RunCopy(t, binDir, "fix.sh", "testdata")
	obversa := filepath.Join(binDir, "obversa")
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
