package cgroup

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestSweep checks which groups Sweep removes under a group of the test's
// own: empty old ones with a swept prefix, also when a killed plugin's
// command group is left inside one, never one with a process, one of
// another name or one younger than the age.
func TestSweep(t *testing.T) {
	parent := testGroup(t)
	mk := func(rel string) string {
		dir := filepath.Join(parent, rel)
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	mk("obversa-plugin-a")
	mk("obversa-plugin-a/" + CommandPrefix + "orphan")
	mk(CommandPrefix + "orphan")
	mk("other")
	busy := mk(CommandPrefix + "busy")
	f, err := os.Open(busy)
	if err != nil {
		t.Fatal(err)
	}
	sleep := exec.Command("sleep", "60")
	sleep.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: int(f.Fd())}
	err = sleep.Start()
	f.Close()
	if err != nil {
		t.Skipf("cannot start a process in a cgroup: %v", err)
	}
	t.Cleanup(func() { _ = sleep.Process.Kill(); _ = sleep.Wait() })

	Sweep(parent, time.Hour, "obversa-plugin-", CommandPrefix)
	if got := children(t, parent); len(got) != 4 {
		t.Fatalf("a sweep of groups an hour old removed young ones: left %v", got)
	}
	// Every group counts as old: the cutoff is a minute ahead. Not age 0:
	// cgroupfs sets a group's modification time when it first shows it,
	// and the nested command group is first looked up inside this sweep,
	// after an age-0 cutoff — under load a clock tick later, which made it
	// young and left it with its plugin group.
	Sweep(parent, -time.Minute, "obversa-plugin-", CommandPrefix)
	got := children(t, parent)
	if len(got) != 2 || got[0] != CommandPrefix+"busy" || got[1] != "other" {
		t.Fatalf("left %v, want the busy command group and the other group", got)
	}
}

// testGroup makes a cgroup v2 group under this process's group and removes
// it with what is left in it at the end; it skips where none can be made.
func testGroup(t *testing.T) string {
	self, err := SelfV2()
	if err != nil {
		t.Skipf("no cgroup v2 group: %v", err)
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	dir := filepath.Join(self, "obversa-test-"+hex.EncodeToString(b[:]))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Skipf("cannot make a cgroup v2 group here: %v", err)
	}
	t.Cleanup(func() {
		Kill(dir)
		if err := RemoveTree(dir); err != nil {
			t.Error(err)
		}
	})
	return dir
}

// children returns the names of dir's child groups, sorted.
func children(t *testing.T, dir string) []string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out
}
