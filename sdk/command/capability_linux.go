package command

import (
	"runtime"
	"sync"
)

var (
	capOnce sync.Once
	capVal  Capability
)

// CleanupCapability describes the cleanup and memory mechanisms Run uses on
// this machine. The first call probes cgroup v2 by creating and removing an
// empty child group; the answer is cached. Run still falls back to /proc
// scanning for a command that cannot be started inside its group.
func CleanupCapability() Capability {
	capOnce.Do(func() {
		c := Capability{
			Platform:     runtime.GOOS,
			ProcessGroup: true,
			ProcScan:     true,
			PidFD:        pidfdUsable(),
			Memory:       "rss-sampling",
			NotGuaranteed: []string{
				"memory spikes shorter than the 50 ms sampling interval can exceed MaxMemoryBytes unnoticed",
			},
		}
		if parent, ok := probeCgroup(); ok && useCgroup {
			c.Cgroup, c.CgroupParent = true, parent
		} else {
			c.NotGuaranteed = append(c.NotGuaranteed,
				"a descendant that leaves the process group, loses its parent between two samples and clears OBVERSA_COMMAND_ID from its environment escapes cleanup")
		}
		if !c.PidFD {
			c.NotGuaranteed = append(c.NotGuaranteed,
				"without pidfds a pid reused between the start-time check and the signal could be signalled")
		}
		capVal = c
	})
	return capVal
}
