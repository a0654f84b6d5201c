package plugin

import (
	"os/exec"
	"runtime"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/obversa/obversa/internal/testutil"
)

// TestStartCmdTimerSlack: a plugin started from a thread with the worker's
// raised slack gets the slack TimerSlackEnv names (docs/decisions.md,
// "The worker's timer slack"), and the starting thread keeps its own.
func TestStartCmdTimerSlack(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	before := testutil.ThreadTimerSlack(t)
	const raised, host = 500_000, 50_000
	if err := unix.Prctl(unix.PR_SET_TIMERSLACK, raised, 0, 0, 0); err != nil {
		t.Skipf("PR_SET_TIMERSLACK: %v", err)
	}
	defer unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(before), 0, 0, 0)
	for _, tc := range []struct {
		env  string
		want int
	}{
		{strconv.Itoa(host), host},
		{"", raised},
		{"soon", raised},
	} {
		t.Setenv(TimerSlackEnv, tc.env)
		if got := testutil.ChildTimerSlack(t, exec.Command("sleep", "30"), startCmd); got != tc.want {
			t.Errorf("%s=%q: the plugin's timer slack is %d ns, want %d", TimerSlackEnv, tc.env, got, tc.want)
		}
		if after := testutil.ThreadTimerSlack(t); after != raised {
			t.Errorf("%s=%q: the starting thread's slack is %d ns after the start, want %d", TimerSlackEnv, tc.env, after, raised)
		}
	}
}
