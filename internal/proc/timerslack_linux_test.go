package proc

import (
	"os/exec"
	"runtime"
	"testing"

	"github.com/obversa/obversa/internal/testutil"
)

// TestStartWithTimerSlack: the child starts with the slack the callback
// chose from the thread's own, or with the thread's own where the callback
// declines, and the starting thread keeps its own slack either way.
func TestStartWithTimerSlack(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	own := testutil.ThreadTimerSlack(t)
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
		got := testutil.ChildTimerSlack(t, exec.Command("sleep", "30"), func(cmd *exec.Cmd) error {
			return StartWithTimerSlack(cmd, func(o int) int { told = o; return tc.slack })
		})
		if told != own {
			t.Errorf("%s: the callback was told %d ns, the thread's slack is %d", tc.name, told, own)
		}
		if got != tc.childSlack {
			t.Errorf("%s: the child's timer slack is %d ns, want %d", tc.name, got, tc.childSlack)
		}
		if after := testutil.ThreadTimerSlack(t); after != own {
			t.Errorf("%s: the starting thread's slack is %d ns after the start, want its own %d", tc.name, after, own)
		}
	}
}
