package testutil

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// ThreadTimerSlack returns the calling thread's timer slack in ns
// (prctl(2) PR_GET_TIMERSLACK); the caller has locked its goroutine to
// the thread. Where the kernel cannot say, the test is skipped.
func ThreadTimerSlack(t testing.TB) int {
	t.Helper()
	slack, err := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0)
	if err != nil {
		t.Skipf("PR_GET_TIMERSLACK: %v", err)
	}
	return slack
}

// ChildTimerSlack starts cmd with start, reads the timer slack in ns the
// process started with (/proc/<pid>/timerslack_ns), then kills and reaps
// it. A start error fails the test; where the slack cannot be read, the
// test is skipped.
func ChildTimerSlack(t testing.TB, cmd *exec.Cmd, start func(*exec.Cmd) error) int {
	t.Helper()
	if err := start(cmd); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/timerslack_ns")
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if err != nil {
		t.Skipf("the child's timer slack cannot be read: %v", err)
	}
	slack, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil {
		t.Fatalf("timerslack_ns holds %q: %v", raw, err)
	}
	return slack
}
