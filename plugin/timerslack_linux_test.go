package plugin

import (
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestStartCmdTimerSlack: a plugin started from a thread with the worker's
// raised slack gets the slack TimerSlackEnv names (docs/decisions.md,
// "The worker's timer slack"), and the starting thread keeps its own.
func TestStartCmdTimerSlack(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	before, err := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0)
	if err != nil {
		t.Skipf("PR_GET_TIMERSLACK: %v", err)
	}
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
		cmd := exec.Command("sleep", "30")
		if err := startCmd(cmd); err != nil {
			t.Fatal(err)
		}
		raw, err := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/timerslack_ns")
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if err != nil {
			t.Skipf("the child's timer slack cannot be read: %v", err)
		}
		if got, _ := strconv.Atoi(strings.TrimSpace(string(raw))); got != tc.want {
			t.Errorf("%s=%q: the plugin's timer slack is %d ns, want %d", TimerSlackEnv, tc.env, got, tc.want)
		}
		if after, err := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0); err != nil || after != raised {
			t.Errorf("%s=%q: the starting thread's slack is %d ns (%v) after the start, want %d", TimerSlackEnv, tc.env, after, err, raised)
		}
	}
}
