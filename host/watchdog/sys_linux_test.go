package watchdog

import (
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/obversa/obversa/plugin"
)

// TestStartLockedTimerSlack: a process started the way the worker is
// starts with WorkerTimerSlack (docs/decisions.md, "The worker's timer
// slack"), is told the forking thread's own slack for its plugins, and
// the thread that forked it gets its own slack back.
func TestStartLockedTimerSlack(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	before, err := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0)
	if err != nil {
		t.Skipf("PR_GET_TIMERSLACK: %v", err)
	}
	if before >= WorkerTimerSlack {
		t.Skipf("this thread's timer slack is %d ns already", before)
	}
	cmd := exec.Command("sleep", "30")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	if err := startLocked(cmd); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/timerslack_ns")
	if err != nil {
		t.Skipf("the child's timer slack cannot be read: %v", err)
	}
	if got, _ := strconv.Atoi(strings.TrimSpace(string(raw))); got != WorkerTimerSlack {
		t.Errorf("the child's timer slack is %d ns, want %d", got, WorkerTimerSlack)
	}
	if want := plugin.TimerSlackEnv + "=" + strconv.Itoa(before); !slices.Contains(cmd.Env, want) {
		t.Errorf("the child's environment %q lacks %s, the slack its plugins start with", cmd.Env, want)
	}
	after, err := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0)
	if err != nil || after != before {
		t.Errorf("the forking thread's timer slack is %d ns (%v) after the start, want its own %d back", after, err, before)
	}
}
