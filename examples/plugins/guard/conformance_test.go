package main

import (
	"os"
	"testing"

	"github.com/obversa/obversa/sdk/conformance"
)

// serveEnv makes the test binary serve the guard, so the conformance kit
// launches it as a run would.
const serveEnv = "OBVERSA_GUARD_SERVE"

func TestMain(m *testing.M) {
	if os.Getenv(serveEnv) != "" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestConformance runs the kit on the guard with conformance.json: every
// case a policy takes passes, and each listed action gets its verdict.
func TestConformance(t *testing.T) {
	opts, err := conformance.LoadOptions("conformance.json")
	if err != nil {
		t.Fatal(err)
	}
	opts.Env = map[string]string{serveEnv: "1", "GORACE": "atexit_sleep_ms=0"}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	rep := conformance.Run(t, exe, opts)
	if rep.Count(conformance.Skip) > 0 || rep.Count(conformance.Pass) != len(conformance.CasesFor("policy")) {
		t.Errorf("%d passed, %d skipped; want every policy case to pass", rep.Count(conformance.Pass), rep.Count(conformance.Skip))
	}
}
