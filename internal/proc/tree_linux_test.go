package proc

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// TestStopTreeFreezesFirst: a marked shell waiting for its child (both
// carry the marker, so the child may be signalled first) is stopped with
// the child, and the shell never gets to run its next command.
func TestStopTreeFreezesFirst(t *testing.T) {
	marker := "OBVERSA_TEST_MARK=" + t.Name() + "-" + time.Now().Format("150405.000000")
	dir := t.TempDir()
	started, side := filepath.Join(dir, "started"), filepath.Join(dir, "side")
	for i := range 20 {
		cmd := exec.Command("sh", "-c", "touch "+started+"; sleep 5; echo done >> "+side)
		cmd.Env = append(os.Environ(), marker)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(5 * time.Second)
		var found []Proc
		// Stopped once sleep runs, so that the two are the shell and
		// sleep: a shell found beside touch may be stopped before it
		// forks sleep, and then only one process is there to stop.
		for !sleeping(found) && time.Now().Before(deadline) {
			found, _ = MarkedTree(marker, nil)
		}
		if len(found) < 2 {
			t.Fatalf("try %d: MarkedTree found %v, want the shell and its child", i, found)
		}
		got, left := StopTree(t.Context(), marker, nil, time.Second)
		_ = cmd.Wait()
		if len(got) < 2 || len(left) != 0 {
			t.Fatalf("try %d: stopped %v, survivors %v", i, got, left)
		}
		if _, err := os.Stat(side); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("try %d: the shell ran its next command after its child was stopped", i)
		}
		_ = os.Remove(started)
	}
}

// sleeping reports whether found holds two processes, one of them sleep.
func sleeping(found []Proc) bool {
	for _, p := range found {
		if b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(p.PID), "comm")); err == nil && string(b) == "sleep\n" {
			return len(found) >= 2
		}
	}
	return false
}
