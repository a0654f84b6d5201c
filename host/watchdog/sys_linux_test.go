package watchdog

import (
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"testing"

	"github.com/obversa/obversa/internal/testutil"
	"github.com/obversa/obversa/plugin"
)

// TestStartLockedTimerSlack: a process started the way the worker is
// starts with WorkerTimerSlack (docs/decisions.md, "The worker's timer
// slack"), is told the forking thread's own slack for its plugins, and
// the thread that forked it gets its own slack back.
func TestStartLockedTimerSlack(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	before := testutil.ThreadTimerSlack(t)
	if before >= WorkerTimerSlack {
		t.Skipf("this thread's timer slack is %d ns already", before)
	}
	cmd := exec.Command("sleep", "30")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	if got := testutil.ChildTimerSlack(t, cmd, startLocked); got != WorkerTimerSlack {
		t.Errorf("the child's timer slack is %d ns, want %d", got, WorkerTimerSlack)
	}
	if want := plugin.TimerSlackEnv + "=" + strconv.Itoa(before); !slices.Contains(cmd.Env, want) {
		t.Errorf("the child's environment %q lacks %s, the slack its plugins start with", cmd.Env, want)
	}
	if after := testutil.ThreadTimerSlack(t); after != before {
		t.Errorf("the forking thread's timer slack is %d ns after the start, want its own %d back", after, before)
	}
}
