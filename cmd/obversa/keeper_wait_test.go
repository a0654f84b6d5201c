package main

import (
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestKeeperWaitsEarly starts a directory run's keeper as the watchdog
// does, hands it the environment line and ends its pipe, and checks from
// the Go runtime's init trace that the process that waited for the end
// initialised none of gRPC, protobuf, HCL, the PostgreSQL driver or the
// host's packages, and that the keeper then ran in full (the second
// process of the trace initialises them; docs/decisions.md, "The keeper
// waits before the host's packages initialise").
func TestKeeperWaitsEarly(t *testing.T) {
	runDir := filepath.Join(t.TempDir(), "runs", "r1")
	cmd := exec.Command(filepath.Join(binDir, "obversa"), "keeper", "--run-dir", runDir)
	cmd.Env = []string{"GODEBUG=inittrace=1", "PATH=/usr/bin:/bin"}
	cmd.Stdin = strings.NewReader("{}\n")
	out, _ := cmd.CombinedOutput() // the run directory does not exist: the keeper's body fails
	var procs [][]string
	for line := range strings.SplitSeq(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) < 3 || f[0] != "init" || !strings.HasPrefix(f[2], "@") {
			continue
		}
		if len(procs) == 0 || (len(procs[len(procs)-1]) > 0 && f[1] == procs[len(procs)-1][0]) {
			procs = append(procs, nil)
		}
		procs[len(procs)-1] = append(procs[len(procs)-1], f[1])
	}
	if len(procs) != 2 {
		t.Fatalf("the keeper's init trace shows %d program starts, want 2 (the wait, then the keeper):\n%s", len(procs), out)
	}
	if h := heavyIn(procs[0]); len(h) > 0 {
		t.Errorf("the keeper waited after initialising %s (%d packages)", strings.Join(h, ", "), len(procs[0]))
	}
	for _, h := range heavyInits {
		if !slices.Contains(procs[1], h) {
			t.Errorf("the keeper's body did not initialise %s: heavyInits is out of date, or the body did not run", h)
		}
	}
}
