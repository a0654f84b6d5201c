package cgroup

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Options says what Create makes.
type Options struct {
	// LimitBytes limits the group's memory and swap; 0 = no limit.
	LimitBytes int64
	// V2 also makes a v2 group (when info has one) to contain the
	// processes even when the limit is enforced by v1 or not at all.
	V2 bool
}

// Create makes the child group name of info's groups: a v2 group when the
// v2 controller enforces the limit or o.V2 asks for one, a v1 memory group
// when the v1 controller enforces it. A limit with no usable controller
// wraps ErrNoMemoryController with the reason; other errors are the file
// system's, and nothing is left behind.
func Create(info Info, name string, o Options) (*Group, error) {
	g := &Group{LimitBytes: o.LimitBytes}
	if o.LimitBytes > 0 {
		if info.Memory == MemoryNone {
			return nil, fmt.Errorf("%w: %s", ErrNoMemoryController, info.Reason)
		}
		g.Controller = info.Memory
	}
	if info.V2 != "" && (o.V2 || g.Controller == MemoryV2) {
		dir := filepath.Join(info.V2, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			return nil, err
		}
		g.V2 = dir
		if g.Controller == MemoryV2 {
			if err := limitV2(dir, o.LimitBytes); err != nil {
				_ = g.Remove()
				return nil, err
			}
		}
	}
	if g.Controller == MemoryV1 {
		dir := filepath.Join(info.V1Memory, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			_ = g.Remove()
			return nil, err
		}
		g.V1Memory = dir
		if err := limitV1(dir, o.LimitBytes); err != nil {
			_ = g.Remove()
			return nil, err
		}
	}
	return g, nil
}

func limitV2(dir string, limit int64) error {
	if err := writeFile(dir, "memory.max", strconv.FormatInt(limit, 10)); err != nil {
		return err
	}
	// No swap: over the limit the OOM killer acts instead of the disk.
	if err := writeFile(dir, "memory.swap.max", "0"); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

func limitV1(dir string, limit int64) error {
	if err := writeFile(dir, "memory.limit_in_bytes", strconv.FormatInt(limit, 10)); err != nil {
		return err
	}
	if err := writeFile(dir, "memory.memsw.limit_in_bytes", strconv.FormatInt(limit, 10)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

func writeFile(dir, name, value string) error {
	return os.WriteFile(filepath.Join(dir, name), []byte(value), 0)
}

// Dirs returns the group's directories: the v2 one, then the v1 memory
// one, each when made.
func (g *Group) Dirs() []string {
	var out []string
	for _, d := range []string{g.V2, g.V1Memory} {
		if d != "" {
			out = append(out, d)
		}
	}
	return out
}

// OOMKills returns how many processes of the group (and its children) the
// kernel's OOM killer has ended: "oom_kill" of memory.events (v2) or of
// memory.oom_control (v1); 0 when the group limits nothing or the kernel
// does not count.
func (g *Group) OOMKills() uint64 {
	var file string
	switch g.Controller {
	case MemoryV2:
		file = filepath.Join(g.V2, "memory.events")
	case MemoryV1:
		file = filepath.Join(g.V1Memory, "memory.oom_control")
	default:
		return 0
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return 0
	}
	return field(b, "oom_kill")
}

// field returns the value of "<key> <n>" in a flat-keyed cgroup file.
func field(b []byte, key string) uint64 {
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, key+" "); ok {
			n, _ := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}

// Procs returns the pids in the group's directories.
func (g *Group) Procs() []int {
	var pids []int
	for _, d := range g.Dirs() {
		pids = append(pids, Procs(d)...)
	}
	slices.Sort(pids)
	return slices.Compact(pids)
}

// Procs returns the pids listed in dir/cgroup.procs; nil when unreadable.
func Procs(dir string) []int {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return nil
	}
	var pids []int
	for f := range strings.FieldsSeq(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// Kill SIGKILLs every process of the v2 group at once (cgroup.kill, Linux
// 5.14+); elsewhere it does nothing and per-process signals do the work.
func (g *Group) Kill() {
	if g.V2 != "" {
		Kill(g.V2)
	}
}

// Kill writes cgroup.kill of the v2 group dir.
func Kill(dir string) { _ = writeFile(dir, "cgroup.kill", "1") }
