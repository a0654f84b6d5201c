package plugin

import (
	"context"
	"os"
	"slices"
	"time"

	"golang.org/x/sys/unix"

	"github.com/obversa/obversa/internal/proc"
)

// stop ends what the launch left after the plugin itself was stopped:
// the processes carrying its marker and their descendants, frozen, then
// SIGTERM, treeGrace, SIGKILL (proc.StopTree); then, for any that dropped
// the marker, SIGKILL to the plugin's process group and its cgroup (the
// confinement's, or the bare group of a launch without one). It returns a
// *LeftRunningError naming what survived, or nil.
func (t *tree) stop() error {
	var left []int
	if !t.supervised {
		_, ps := proc.StopTree(context.Background(), t.marker, map[int]bool{os.Getpid(): true}, treeGrace)
		for _, p := range ps {
			left = append(left, p.PID)
		}
	}
	if t.pgid > 0 {
		_ = unix.Kill(-t.pgid, unix.SIGKILL)
	}
	if t.confine != nil {
		t.confine.Kill()
		left = append(left, waitCgroupEmpty(t.confine, 2*time.Second)...)
	}
	left = append(left, t.bare.stop()...)
	if len(left) == 0 {
		return nil
	}
	slices.Sort(left)
	return &LeftRunningError{Plugin: t.name, PIDs: slices.Compact(left)}
}

// waitCgroupEmpty waits up to d for the killed cgroup c to empty and
// returns the pids still in it.
func waitCgroupEmpty(c interface{ Procs() []int }, d time.Duration) []int {
	deadline := time.Now().Add(d)
	for {
		pids := c.Procs()
		if len(pids) == 0 || time.Now().After(deadline) {
			return pids
		}
		time.Sleep(10 * time.Millisecond)
	}
}
