package failpoint_test

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/obversa/obversa/internal/testutil"
)

// TestReleaseBinaryHasNone builds obversa as a release does and with the
// failpoints tag, and reads both symbol tables: the release binary holds
// no code of this package (every call site compiled away), the tagged one
// does (so the check can fail).
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
