package failpoint_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/obversa/obversa/internal/testutil"
	"github.com/obversa/obversa/plugin/confine"
)

// TestReleaseBinaryHasNone builds obversa as a release does and with the
// failpoints tag, and reads both symbol tables: the release binary holds
// no code of this package (every call site compiled away), the tagged one
// does (so the check can fail). The same holds for the kernel features a
// test build may hide from plugin/confine.
func TestReleaseBinaryHasNone(t *testing.T) {
	if testing.Short() {
		t.Skip("builds obversa twice")
	}
	dir := t.TempDir()
	pkgs := map[string]string{"obversa": "./cmd/obversa"}
	if err := testutil.BuildBinaries(filepath.Join(dir, "release"), pkgs); err != nil {
		t.Fatal(err)
	}
	if err := testutil.BuildBinaries(filepath.Join(dir, "tagged"), pkgs, testutil.FailpointsTag); err != nil {
		t.Fatal(err)
	}
	const sym = "obversa/internal/failpoint."
	if n := symbols(t, filepath.Join(dir, "release", "obversa"), sym); n != 0 {
		t.Errorf("the release binary has %d symbols of internal/failpoint, want 0", n)
	}
	if n := symbols(t, filepath.Join(dir, "tagged", "obversa"), sym); n == 0 {
		t.Errorf("the failpoints binary has no symbol of internal/failpoint: the check cannot tell")
	}
	// The other test-only hook: a test build may hide kernel features from
	// plugin/confine.Detect through an environment variable; a release
	// binary does not read it.
	if contains(t, filepath.Join(dir, "release", "obversa"), confine.FakeKernelEnv) {
		t.Errorf("the release binary reads %s", confine.FakeKernelEnv)
	}
	if !contains(t, filepath.Join(dir, "tagged", "obversa"), confine.FakeKernelEnv) {
		t.Errorf("the failpoints binary does not read %s: the check cannot tell", confine.FakeKernelEnv)
	}
}

// contains reports whether the file bin holds the text s.
func contains(t *testing.T, bin, s string) bool {
	t.Helper()
	b, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Contains(b, []byte(s))
}

// symbols counts the symbols of bin whose name contains sub.
func symbols(t *testing.T, bin, sub string) int {
	t.Helper()
	out, err := exec.Command("go", "tool", "nm", bin).Output()
	if err != nil {
		t.Fatalf("go tool nm %s: %v", bin, err)
	}
	n := 0
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, sub) {
			n++
		}
	}
	return n
}
