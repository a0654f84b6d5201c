package plugin

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/obversa/obversa/internal/cgroup"
	"github.com/obversa/obversa/plugin/confine"
)

// bareGroup is a cgroup v2 group with no limit that a launch starts its
// process in (CLONE_INTO_CGROUP) when its confinement makes no v2 group of
// its own: stop kills it whole (cgroup.kill), so a descendant that left
// the plugin's process group and session and emptied its environment
// (dropping the launch marker) is stopped too.
type bareGroup struct {
	g   *cgroup.Group
	dir *os.File // the group's directory, for SysProcAttr.CgroupFD
}

// sweepOnce removes, once per process, the empty groups launches of
// killed processes left (cgroup.Sweep).
var sweepOnce sync.Once

// newBareGroup makes a launch's bare group under this process's cgroup v2
// group; nil when there is none or it cannot be written (not delegated to
// this user): the launch then relies on its process group and marker.
func newBareGroup() *bareGroup {
	parent, err := cgroup.SelfV2()
	if err != nil {
		return nil
	}
	sweepOnce.Do(func() { cgroup.Sweep(parent, confine.GroupPrefix, 10*time.Minute) })
	g, err := cgroup.Create(cgroup.Info{V2: parent}, confine.GroupPrefix+randomHex(), cgroup.Options{V2: true})
	if err != nil {
		return nil
	}
	dir, err := os.Open(g.V2)
	if err != nil {
		_ = g.Remove()
		return nil
	}
	return &bareGroup{g: g, dir: dir}
}

// apply starts cmd in the group (after setProcAttr); nil applies nothing.
func (b *bareGroup) apply(cmd *exec.Cmd) {
	if b == nil {
		return
	}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, int(b.dir.Fd())
}

// stop SIGKILLs every process in the group, waits up to 2 s for it to
// empty and removes it. It returns the pids still in it.
func (b *bareGroup) stop() []int {
	if b == nil {
		return nil
	}
	b.g.Kill()
	left := waitCgroupEmpty(b.g, 2*time.Second)
	_ = b.dir.Close()
	if len(left) == 0 {
		_ = b.g.Remove()
	}
	return left
}

// randomHex returns 16 random hex digits, naming a group.
func randomHex() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
