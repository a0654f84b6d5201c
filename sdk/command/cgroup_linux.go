package command

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	cgroupfs "github.com/obversa/obversa/internal/cgroup"
)

// cgroupPrefix names the child groups Run creates.
const cgroupPrefix = "obversa-cmd-"

// cgroup is a cgroup v2 child group holding one command's processes.
type cgroup struct {
	dir string
	fd  int // O_PATH-free directory fd for CLONE_INTO_CGROUP
}

// cgroupParent returns the directory of this process's cgroup v2 group,
// from /proc/self/cgroup ("0::<path>") and the cgroup2 mount in
// /proc/self/mountinfo.
func cgroupParent() (string, error) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	var rel string
	found := false
	for line := range strings.SplitSeq(string(b), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			rel, found = p, true
			break
		}
	}
	if !found {
		return "", errors.New("no cgroup v2 membership")
	}
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return "", err
	}
	sc := bufio.NewScanner(bytes.NewReader(mi))
	for sc.Scan() {
		// id parent major:minor root mountpoint options... - fstype source super
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok || !strings.HasPrefix(post, "cgroup2 ") {
			continue
		}
		f := strings.Fields(pre)
		if len(f) < 5 {
			continue
		}
		root, mount := f[3], f[4]
		sub, ok := strings.CutPrefix(rel, root)
		if !ok {
			continue // our group is outside this mount's view
		}
		return filepath.Join(mount, sub), nil
	}
	return "", errors.New("no cgroup2 mount")
}

// newCgroup creates the child group for command id.
func newCgroup(id string) (*cgroup, error) {
	parent, err := cgroupParent()
	if err != nil {
		return nil, err
	}
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
func (c *cgroup) kill() {
	_ = os.WriteFile(filepath.Join(c.dir, "cgroup.kill"), []byte("1"), 0)
}

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

// remove closes the group's fd and deletes it, retrying briefly while the
// kernel finishes releasing its last processes.
func (c *cgroup) remove() error {
	unix.Close(c.fd)
	var err error
	for range 50 {
		if err = unix.Rmdir(c.dir); err == nil || errors.Is(err, unix.ENOENT) {
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	return fmt.Errorf("remove cgroup %s: %w", c.dir, err)
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
