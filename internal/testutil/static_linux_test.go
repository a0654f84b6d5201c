package testutil_test

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/obversa/obversa/internal/testutil"
)

// TestMakeBuildIsStatic runs `make build` into a temporary directory with
// cgo enabled in the environment and fails if a binary it writes asks for
// a dynamic loader (an ELF PT_INTERP program header): the Makefile must
// turn cgo off itself (docs/decisions.md, "Every binary of a run is linked statically").
func TestMakeBuildIsStatic(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}
	root, err := testutil.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	cmd := exec.Command("make", "build", "BIN="+bin)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make build: %v\n%s", err, out)
	}
	entries, err := os.ReadDir(bin)
	if err != nil || len(entries) == 0 {
		t.Fatalf("make build wrote %d files into %s (%v)", len(entries), bin, err)
	}
	for _, e := range entries {
		f, err := elf.Open(filepath.Join(bin, e.Name()))
		if err != nil {
			t.Errorf("%s: %v", e.Name(), err)
			continue
		}
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP {
				t.Errorf("%s is linked dynamically: it names an interpreter (PT_INTERP)", e.Name())
			}
		}
		_ = f.Close()
	}
}
