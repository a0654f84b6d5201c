package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/obversa/obversa/plugin/confine"
)

// heavyInits are packages of the obversa binary whose initialisation a
// confining shim must not wait for (docs/decisions.md, "The shim starts
// before the host's packages initialise").
var heavyInits = []string{
	"google.golang.org/grpc", "google.golang.org/protobuf/types/descriptorpb",
	"google.golang.org/protobuf/reflect/protodesc", "github.com/hashicorp/go-plugin",
	"github.com/jackc/pgx/v5/pgtype", "github.com/zclconf/go-cty/cty", "github.com/spf13/cobra",
	"golang.org/x/text/secure/precis", "encoding/gob", "encoding/json", "net/http",
	"github.com/obversa/obversa/host/graph",
}

// initTrace runs the obversa binary with args under GODEBUG=inittrace=1,
// with extra as its descriptor 3, and returns the packages it initialised.
func initTrace(t *testing.T, extra *os.File, args ...string) []string {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "obversa"), args...)
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	if extra != nil {
		cmd.ExtraFiles = []*os.File{extra}
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("obversa %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	var pkgs []string
	for line := range strings.SplitSeq(string(out), "\n") {
		if f := strings.Fields(line); len(f) > 2 && f[0] == "init" && strings.HasPrefix(f[2], "@") {
			pkgs = append(pkgs, f[1])
		}
	}
	return pkgs
}

// heavyIn returns the packages of pkgs that heavyInits names.
func heavyIn(pkgs []string) []string {
	var out []string
	for _, p := range pkgs {
		for _, h := range heavyInits {
			if p == h {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

// TestConfineShimStartsEarly runs the confining shim as the host does (the
// payload on descriptor 3; here it executes /bin/true) and checks from
// the Go runtime's init trace that it executed the plugin before gRPC,
// protobuf, HCL, the PostgreSQL driver or the host's packages were
// initialised, while an ordinary command initialises them.
func TestConfineShimStartsEarly(t *testing.T) {
	truePath, err := exec.LookPath("true")
	if err != nil {
		t.Skip("no true(1)")
	}
	payload := filepath.Join(t.TempDir(), "payload")
	if err := os.WriteFile(payload, []byte("exec="+truePath+"\x00"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(payload)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	shim := initTrace(t, f, confine.ShimArg)
	if len(shim) == 0 {
		t.Fatal("the shim run printed no init trace")
	}
	if h := heavyIn(shim); len(h) > 0 {
		t.Errorf("the shim waited for the initialisation of %s (%d packages before it)", strings.Join(h, ", "), len(shim))
	}
	// Each package named must be one an ordinary command initialises,
	// or the check above tells nothing.
	full := initTrace(t, nil, "version")
	for _, h := range heavyInits {
		if !slices.Contains(full, h) {
			t.Errorf("obversa version does not initialise %s: heavyInits is out of date", h)
		}
	}
}
