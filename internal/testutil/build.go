package testutil

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// FailpointsTag is the build tag that compiles the failpoints in
// (internal/failpoint); crash tests build the binaries they run with it.
const FailpointsTag = "failpoints"

// ModuleRoot returns the module root: the nearest directory above the
// working directory that holds go.mod.
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above %s", dir)
		}
		dir = parent
	}
}

// PluginBuildFlags are the `go build` flags `make build` gives the
// bundled plugins (PLUGIN_FLAGS in the Makefile): no symbol table, no
// DWARF and no build paths, which leaves about 30 % fewer bytes to hash
// and copy into a plugin cache. Stack traces keep their function names
// and lines. obversa itself keeps its symbol table, which
// TestReleaseBinaryHasNone reads.
var PluginBuildFlags = []string{"-trimpath", "-ldflags=-s -w"}

// isPlugin reports whether pkg (relative to the module root) is a bundled
// plugin, built with PluginBuildFlags.
func isPlugin(pkg string) bool {
	return strings.HasPrefix(pkg, "./plugins/") || strings.HasPrefix(pkg, "./examples/plugins/")
}

// StaticEnv is the environment entry `make build` builds every binary
// with: no cgo, so the binary is linked statically and starts without the
// dynamic loader and libc (docs/decisions.md, "Before the first
// dispatch").
const StaticEnv = "CGO_ENABLED=0"

// BuildBinaries is the TestMain helper that builds the binaries a test
// package runs: pkgs maps a binary name to its package path relative to
// the module root ("./cmd/obversa"); each lands in dir, built as `make
// build` builds it (StaticEnv; a bundled plugin with PluginBuildFlags
// too). tags are passed to
// `go build -tags` (FailpointsTag for crash tests). The error carries the
// compiler's output.
func BuildBinaries(dir string, pkgs map[string]string, tags ...string) error {
	root, err := ModuleRoot()
	if err != nil {
		return err
	}
	names := make([]string, 0, len(pkgs))
	for n := range pkgs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		args := []string{"build"}
		if len(tags) > 0 {
			args = append(args, "-tags", strings.Join(tags, ","))
		}
		if isPlugin(pkgs[name]) {
			args = append(args, PluginBuildFlags...)
		}
		args = append(args, "-o", filepath.Join(dir, name), pkgs[name])
		cmd := exec.Command("go", args...)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), StaticEnv)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("building %s: %v\n%s", name, err, out)
		}
	}
	return nil
}
