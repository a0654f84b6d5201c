package plugin

import (
	"crypto/rand"
	"encoding/hex"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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
// killed processes left and the command groups (sdk/command) of plugins
// killed while a command ran, at the top or inside their plugin's group
// (cgroup.Sweep).
var sweepOnce sync.Once

// newBareGroup makes a launch's bare group under this process's cgroup v2
// group, named with tag when not "" (StopTaggedGroups); nil when there is
// none or it cannot be written (not delegated to this user): the launch
// then relies on its process group and marker.
func newBareGroup(tag string) *bareGroup {
	parent, err := cgroup.SelfV2()
	if err != nil {
		return nil
	}
	// The sweep reads every child group of parent (thousands, on a machine
	// whose killed processes left many) and can only remove groups ten
	// minutes old, never the one made below: it runs beside the launch,
	// not before it.
	sweepOnce.Do(func() { go cgroup.Sweep(parent, cgroup.SweepAge, confine.GroupPrefix, cgroup.CommandPrefix) })
	g, err := cgroup.Create(cgroup.Info{V2: parent}, confine.TaggedPrefix(tag)+randomHex(), cgroup.Options{V2: true})
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
	t := treeOf(b.g.V2)
	left := waitCgroupEmpty(t, 2*time.Second)
	_ = b.dir.Close()
	if len(left) == 0 {
		for _, g := range t {
			_ = cgroup.Remove(g)
		}
	}
	return left
}

// randomHex returns 16 random hex digits, naming a group.
func randomHex() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// taggedGroups returns the directories of the groups launches with
// LaunchConfig.GroupTag tag made under this process's cgroup v2 group:
// bare groups, and memory groups of a confine.Spec with that GroupTag.
func taggedGroups(tag string) []string {
	if tag == "" {
		return nil
	}
	parent, err := cgroup.SelfV2()
	if err != nil {
		return nil
	}
	dirs, _ := filepath.Glob(filepath.Join(parent, confine.TaggedPrefix(tag)+"*"))
	return dirs
}

// taggedV1Groups returns the directories of the memory groups launches
// with LaunchConfig.GroupTag tag made in this process's cgroup v1 memory
// hierarchy (a confine.Spec with that GroupTag where the memory
// controller is v1); nil without one.
func taggedV1Groups(tag string) []string {
	if tag == "" {
		return nil
	}
	info, err := cgroup.Self()
	if err != nil || info.V1Memory == "" {
		return nil
	}
	dirs, _ := filepath.Glob(filepath.Join(info.V1Memory, confine.TaggedPrefix(tag)+"*"))
	return dirs
}

// TaggedGroupPIDs returns the pids in the groups that launches with
// LaunchConfig.GroupTag tag made under this process's cgroup v2 group and
// in its v1 memory group; nil without either.
func TaggedGroupPIDs(tag string) []int {
	var pids []int
	for _, d := range append(taggedGroups(tag), taggedV1Groups(tag)...) {
		pids = append(pids, treeProcs(d)...)
	}
	return pids
}

// groupTree is a cgroup directory and its child groups (those a plugin's
// commands were put in, sdk/command), deepest first.
type groupTree []string

// treeOf lists dir's groups, deepest first.
func treeOf(dir string) groupTree {
	var dirs groupTree
	_ = filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err == nil && e.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	slices.Reverse(dirs)
	return dirs
}

// Procs returns the pids in every group of the tree.
func (t groupTree) Procs() []int {
	var pids []int
	for _, d := range t {
		pids = append(pids, cgroup.Procs(d)...)
	}
	return pids
}

// treeProcs returns the pids in dir's group and every group under it.
func treeProcs(dir string) []int { return treeOf(dir).Procs() }

// StopTaggedGroups SIGKILLs every process in the groups that launches
// with LaunchConfig.GroupTag tag made under this process's cgroup v2 group
// (cgroup.kill, whatever session or environment a process has) and in its
// cgroup v1 memory group (each pid the group lists: v1 has no
// cgroup.kill), waits up to 2 s for them to empty and removes the empty
// ones — memory groups included, which the launching process would have
// released had it not died. It returns the pids that were in them and
// those still there. A supervisor that outlives the launching process and
// shares its cgroups (a run's watchdog, its keeper) stops through it what
// no marker finds and removes what the launcher left.
func StopTaggedGroups(tag string) (stopped, left []int) {
	dirs := taggedGroups(tag)
	for _, d := range dirs {
		stopped = append(stopped, treeProcs(d)...)
		cgroup.Kill(d) // the whole subtree
	}
	v1 := taggedV1Groups(tag)
	for _, d := range v1 {
		pids := treeProcs(d)
		stopped = append(stopped, pids...)
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	for _, d := range append(dirs, v1...) {
		t := treeOf(d)
		if l := waitCgroupEmpty(t, 2*time.Second); len(l) > 0 {
			left = append(left, l...)
			continue
		}
		for _, g := range t {
			_ = cgroup.Remove(g)
		}
	}
	return stopped, left
}
