//go:build !linux

package command

import (
	"context"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"time"
)

// tracker follows only the started process where /proc is unavailable.
type tracker struct {
	cmd *exec.Cmd
}

func newTracker(string) *tracker { return &tracker{} }

func (t *tracker) prepare(cmd *exec.Cmd, _ string, _ bool) { t.cmd = cmd }
func (t *tracker) usesCgroup() bool                        { return false }
func (t *tracker) startFailed()                            {}
func (t *tracker) started(int)                             {}
func (t *tracker) sample() int64                           { return 0 }
func (t *tracker) peakBytes() int64                        { return 0 }
func (t *tracker) release()                                {}

// teardown interrupts the started process, waits up to grace and kills it.
// Its exit is observed by Run's Wait, so nothing is verified here.
func (t *tracker) teardown(grace time.Duration, exited bool) []Process {
	if exited || t.cmd == nil || t.cmd.Process == nil {
		return nil
	}
	if grace > 0 && t.cmd.Process.Signal(os.Interrupt) == nil {
		// Signal reports os.ErrProcessDone once Run's Wait has reaped it.
		for end := time.Now().Add(grace); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
			if t.cmd.Process.Signal(syscall.Signal(0)) != nil {
				return nil
			}
		}
	}
	_ = t.cmd.Process.Kill()
	return nil
}

// pipeHolders cannot tell who holds a pipe without /proc.
func pipeHolders(...*os.File) []Process { return nil }

// exitDetails reports no signal and no memory figure off Linux.
func exitDetails(*os.ProcessState) (string, int64) { return "", 0 }

// CleanupCapability reports that only the started process is stopped.
func CleanupCapability() Capability {
	return Capability{
		Platform: runtime.GOOS,
		Memory:   "none",
		NotGuaranteed: []string{
			"only the started process is stopped; its descendants are not tracked",
			"MaxMemoryBytes is not enforced",
		},
	}
}

// InspectOwnerMarked needs /proc; it returns ErrUnsupported.
func InspectOwnerMarked(string) ([]Process, error) { return nil, ErrUnsupported }

// StopOwnedTree needs /proc; it returns ErrUnsupported.
func StopOwnedTree(context.Context, string, time.Duration) ([]Process, error) {
	return nil, ErrUnsupported
}
