package command

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	cgroupfs "github.com/obversa/obversa/internal/cgroup"
)

// cgroupPrefix names the child groups Run creates.
const cgroupPrefix = cgroupfs.CommandPrefix

// sweepOnce sweeps, once per process, the command groups of processes
// killed while their command ran (sweepOrphans).
var sweepOnce sync.Once

// sweepOrphans removes the empty command groups under parent older than
// age: those of a process killed (SIGKILL, a crash) while a command ran,
// which nothing else removes when that process was not in a group of its
// own that its launcher removes whole. It runs beside the first command,
// never on its path; it reads every child group of parent.
func sweepOrphans(parent string, age time.Duration) {
	cgroupfs.Sweep(parent, age, cgroupPrefix)
}

// cgroup is a cgroup v2 child group holding one command's processes.
type cgroup struct {
	dir string
	fd  int // O_PATH-free directory fd for CLONE_INTO_CGROUP
}

// newCgroup creates the child group for command id under this process's
// cgroup v2 group (internal/cgroup.SelfV2).
func newCgroup(id string) (*cgroup, error) {
	parent, err := cgroupfs.SelfV2()
	if err != nil {
		return nil, err
	}
	sweepOnce.Do(func() { go sweepOrphans(parent, cgroupfs.SweepAge) })
	dir := filepath.Join(parent, cgroupPrefix+id)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, err
	}
	fd, err := unix.Open(dir, unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		_ = os.Remove(dir)
		return nil, fmt.Errorf("open cgroup: %w", err)
	}
	return &cgroup{dir: dir, fd: fd}, nil
}

// procs lists the pids in the group.
func (c *cgroup) procs() []int { return cgroupfs.Procs(c.dir) }

// kill SIGKILLs every process in the group at once (Linux 5.14+); on
// older kernels it does nothing and per-process signals do the work.
func (c *cgroup) kill() { cgroupfs.Kill(c.dir) }

// memoryPeak returns memory.peak in bytes, 0 when the memory controller is
// not enabled for the group.
func (c *cgroup) memoryPeak() int64 {
	b, err := os.ReadFile(filepath.Join(c.dir, "memory.peak"))
	if err != nil {
		return 0
	}
	n, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return n
}

// remove closes the group's fd and deletes it with the groups the command
// made under it (a nested run's command groups, which teardown's
// cgroup.kill emptied), retrying briefly while the kernel finishes
// releasing their last processes.
func (c *cgroup) remove() error {
	unix.Close(c.fd)
	return cgroupfs.RemoveTree(c.dir)
}

// removeLater retries removing the group, at growing intervals up to a
// minute, until it is gone: its last process outlived teardown or was
// still exiting when remove gave up.
func (c *cgroup) removeLater() {
	wait := time.Second
	for {
		time.Sleep(wait)
		if cgroupfs.RemoveTree(c.dir) == nil {
			return
		}
		wait = min(2*wait, time.Minute)
	}
}

// probeCgroup reports whether a child group can be created here, and under
// which parent.
func probeCgroup() (string, bool) {
	cg, err := newCgroup("probe-" + newCommandID())
	if err != nil {
		return "", false
	}
	parent := filepath.Dir(cg.dir)
	return parent, cg.remove() == nil
}
