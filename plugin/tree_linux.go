package plugin

import (
	"context"
	"os"
	"slices"
	"time"

	"golang.org/x/sys/unix"

	"github.com/obversa/obversa/internal/proc"
	"github.com/obversa/obversa/plugin/confine"
)

// stop ends what the launch left after the plugin itself was stopped:
// the processes carrying its marker and their descendants, frozen, then
// SIGTERM, treeGrace, SIGKILL (proc.StopTree); then, for any that dropped
// the marker, SIGKILL to the plugin's process group and its cgroup. It
// returns a *LeftRunningError naming what survived, or nil.
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
	if len(left) == 0 {
		return nil
	}
	slices.Sort(left)
	return &LeftRunningError{Plugin: t.name, PIDs: slices.Compact(left)}
}

// waitCgroupEmpty waits up to d for the killed cgroup to empty and returns
// the pids still in it.
func waitCgroupEmpty(c *confine.Prepared, d time.Duration) []int {
	deadline := time.Now().Add(d)
	for {
		pids := c.Procs()
		if len(pids) == 0 || time.Now().After(deadline) {
			return pids
		}
		time.Sleep(10 * time.Millisecond)
	}
}
