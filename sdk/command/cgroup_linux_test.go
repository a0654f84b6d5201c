package command

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	cgroupfs "github.com/obversa/obversa/internal/cgroup"
)

// TestCommandGroupsDoNotOutliveCommands runs a plugin-like process that
// runs one command in a cgroup v2 group of the test's own and checks that
// no command group is left in it: when the command ends, when its
// deadline stops it (each also with a command that makes a group of its
// own under its command group, as a nested run does), and when the
// process running it is SIGKILLed while the command runs (then after the
// sweep of orphaned groups, with its age threshold at zero instead of
// cgroup.SweepAge).
func TestCommandGroupsDoNotOutliveCommands(t *testing.T) {
	for _, how := range []string{"end", "end-subgroup", "deadline", "deadline-subgroup", "killed"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			parent := testParentGroup(t)
			cmd := startInGroup(t, parent, "run", how)
			if how != "killed" {
				if err := cmd.Wait(); err != nil {
					t.Fatalf("the process running the command: %v", err)
				}
			} else {
				group := waitCommandGroup(t, parent)
				if err := cmd.Process.Kill(); err != nil {
					t.Fatal(err)
				}
				_ = cmd.Wait()
				// The command outlives the process that ran it; stop it
				// as the plugin's launcher would, leaving its group empty.
				cgroupfs.Kill(group)
				waitEmpty(t, group)
				if got := commandGroups(t, parent); !slices.Equal(got, []string{group}) {
					t.Fatalf("after the kill, command groups %v, want the orphan %s", got, group)
				}
				sweepOrphans(parent, 0)
			}
			if got := commandGroups(t, parent); len(got) > 0 {
				t.Fatalf("command groups left: %v", got)
			}
		})
	}
}

// testParentGroup makes a cgroup v2 group under this process's group for
// one test's processes and removes it, and anything left in it, at the
// end. It skips the test where no group can be made.
func testParentGroup(t *testing.T) string {
	t.Helper()
	self, err := cgroupfs.SelfV2()
	if err != nil {
		t.Skipf("no cgroup v2 group: %v", err)
	}
	dir := filepath.Join(self, "obversa-test-"+newCommandID())
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Skipf("cannot make a cgroup v2 group here: %v", err)
	}
	t.Cleanup(func() {
		cgroupfs.Kill(dir)
		if err := cgroupfs.RemoveTree(dir); err != nil {
			t.Error(err)
		}
	})
	return dir
}

// startInGroup starts the test binary as the helper in mode with args,
// in the cgroup v2 group dir from its first instruction.
func startInGroup(t *testing.T, dir, mode string, args ...string) *exec.Cmd {
	t.Helper()
	f, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	argv, env := helperArgv(mode, args...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: int(f.Fd())}
	if err := cmd.Start(); err != nil {
		t.Skipf("cannot start a process in a cgroup (CLONE_INTO_CGROUP): %v", err)
	}
	return cmd
}

// commandGroups lists the command groups directly under dir.
func commandGroups(t *testing.T, dir string) []string {
	t.Helper()
	groups, err := filepath.Glob(filepath.Join(dir, cgroupPrefix+"*"))
	if err != nil {
		t.Fatal(err)
	}
	return groups
}

// waitCommandGroup waits up to 10 s for a command group under dir to hold
// a process and returns it.
func waitCommandGroup(t *testing.T, dir string) string {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		for _, g := range commandGroups(t, dir) {
			if len(cgroupfs.Procs(g)) > 0 {
				return g
			}
		}
	}
	t.Fatalf("no command started in a group under %s", dir)
	return ""
}

// waitEmpty waits up to 5 s for group to be unpopulated. cgroup.procs
// stops listing a killed process while it is still exiting, and the
// kernel refuses to remove the group (EBUSY) until cgroup.events says
// "populated 0", so that is what is waited for.
func waitEmpty(t *testing.T, group string) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); populated(group); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s still holds %v", group, cgroupfs.Procs(group))
		}
	}
}

// populated reports whether group's cgroup.events says it still holds a
// process (true when the file cannot be read, so that waitEmpty waits).
func populated(group string) bool {
	b, err := os.ReadFile(filepath.Join(group, "cgroup.events"))
	return err != nil || !bytes.Contains(b, []byte("populated 0"))
}

// makeSubgroup makes a child group under this process's cgroup v2 group.
func makeSubgroup() error {
	self, err := cgroupfs.SelfV2()
	if err != nil {
		return err
	}
	return os.Mkdir(filepath.Join(self, "inner"), 0o755)
}
