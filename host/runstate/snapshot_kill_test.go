package runstate

import (
	"context"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/obversa/obversa/store"
)

// saveLoopEnv makes TestSnapshotSaveLoop the helper process of
// TestSnapshotKilledMidSave: it names the run directory to save in.
const saveLoopEnv = "RUNSTATE_SAVE_LOOP_DIR"

// TestSnapshotSaveLoop, in a helper process, saves the fold snapshot of
// the run in $RUNSTATE_SAVE_LOOP_DIR at alternating revisions until it
// is killed.
func TestSnapshotSaveLoop(t *testing.T) {
	dir := os.Getenv(saveLoopEnv)
	if dir == "" {
		t.Skip("helper process of TestSnapshotKilledMidSave")
	}
	ctx := context.Background()
	run, err := store.OpenRunDirReadOnly(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	var states []*State
	for _, end := range []int64{5, run.Rev()} {
		s := New()
		if err := run.Read(ctx, 1, func(e store.Event) error {
			if e.Rev > end {
				return errStop
			}
			return s.Apply(e)
		}); err != nil && err != errStop {
			t.Fatal(err)
		}
		states = append(states, s)
	}
	os.WriteFile(filepath.Join(dir, "saving"), nil, 0o644)
	for i := 0; ; i++ {
		if err := SaveSnapshot(dir, states[i%2]); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSnapshotKilledMidSave kills (SIGKILL) a process saving snapshots
// over and over at random moments: every time, the record opens and
// verifies, the snapshot left is whole (one of the two it saved), and a
// reader's fold is the full fold.
func TestSnapshotKilledMidSave(t *testing.T) {
	ctx := context.Background()
	run, dir := storeRecord(t, richRun(t)...)
	full, err := Load(ctx, run)
	if err != nil {
		t.Fatal(err)
	}
	run.Close()
	for i := range 12 {
		os.Remove(filepath.Join(dir, "saving"))
		cmd := exec.Command(os.Args[0], "-test.run=^TestSnapshotSaveLoop$", "-test.count=1")
		cmd.Env = append(os.Environ(), saveLoopEnv+"="+dir)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Millisecond) {
			if _, err := os.Stat(filepath.Join(dir, "saving")); err == nil {
				break
			}
			if time.Now().After(deadline) {
				cmd.Process.Kill()
				t.Fatal("the helper did not start saving")
			}
		}
		time.Sleep(time.Duration(rand.IntN(20000)) * time.Microsecond)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()

		rep, err := store.Verify(ctx, dir)
		if err != nil || len(rep.Faults) > 0 {
			t.Fatalf("kill %d: verify: %v %v", i, err, rep.Faults)
		}
		ro, err := store.OpenRunDir(ctx, dir, store.Policy{})
		if err != nil {
			t.Fatalf("kill %d: open: %v", i, err)
		}
		if err := CheckSnapshot(ctx, ro, dir); err != nil {
			t.Errorf("kill %d: the snapshot left: %v", i, err)
		}
		got, err := LoadWithSnapshot(ctx, ro, dir)
		if err != nil {
			t.Fatalf("kill %d: %v", i, err)
		}
		if d := cmp.Diff(full, got, deep...); d != "" {
			t.Errorf("kill %d: reader's fold (-full +got):\n%s", i, d)
		}
		ro.Close()
	}
	left, _ := filepath.Glob(filepath.Join(dir, SnapshotFile+".tmp-*"))
	t.Logf("temporary files left by the last kill: %d", len(left))
}
