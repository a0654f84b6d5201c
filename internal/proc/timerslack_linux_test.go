package proc

import (
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestStartWithTimerSlack: the child starts with the slack the callback
// chose from the thread's own, or with the thread's own where the callback
// declines, and the starting thread keeps its own slack either way.
func TestStartWithTimerSlack(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	own, err := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0)
	if err != nil {
		t.Skipf("PR_GET_TIMERSLACK: %v", err)
	}
	for _, tc := range []struct {
		name       string
		slack      int
		childSlack int
	}{
		{"raised", own + 250_000, own + 250_000},
		{"own", own, own},
		{"declined", 0, own},
	} {
		var told int
		cmd := exec.Command("sleep", "30")
		if err := StartWithTimerSlack(cmd, func(o int) int { told = o; return tc.slack }); err != nil {
			t.Fatal(err)
		}
		raw, err := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/timerslack_ns")
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if err != nil {
			t.Skipf("the child's timer slack cannot be read: %v", err)
		}
		if told != own {
			t.Errorf("%s: the callback was told %d ns, the thread's slack is %d", tc.name, told, own)
		}
		if got, _ := strconv.Atoi(strings.TrimSpace(string(raw))); got != tc.childSlack {
			t.Errorf("%s: the child's timer slack is %d ns, want %d", tc.name, got, tc.childSlack)
		}
		if after, err := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0); err != nil || after != own {
			t.Errorf("%s: the starting thread's slack is %d ns (%v) after the start, want its own %d", tc.name, after, err, own)
		}
	}
}
