package cgroup

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Self returns where this process's control groups are and which
// controller can limit a child group's memory. To tell, it may add
// "memory" to the v2 group's cgroup.subtree_control, which only succeeds
// where the kernel allows it (the group has no processes of its own, or is
// the root). An error means /proc could not be read.
func Self() (Info, error) {
	groups, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return Info{}, err
	}
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return Info{}, err
	}
	info := locate(groups, mounts)
	info.Memory, info.Reason = memoryController(info)
	return info, nil
}

// SelfV2 returns the directory of this process's cgroup v2 group, as
// Self's Info.V2, without probing or enabling any controller. It is an
// error when /proc cannot be read or no cgroup2 file system shows the
// group.
func SelfV2() (string, error) {
	groups, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return "", err
	}
	dir := locate(groups, mounts).V2
	if dir == "" {
		return "", errors.New("no cgroup2 file system shows this process's group")
	}
	return dir, nil
}

// mount is one control group file system from mountinfo.
type mount struct {
	root, point string
	v2          bool
	options     []string // super options of a v1 mount: its controllers
}

// locate finds the v2 group and the v1 memory group of /proc/self/cgroup
// (groups) in the mounts of /proc/self/mountinfo.
func locate(groups, mountinfo []byte) Info {
	var v2Path, memPath string
	haveV2, haveMem := false, false
	for line := range strings.SplitSeq(string(groups), "\n") {
		// hierarchy-id:controllers:path
		id, rest, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		ctrls, path, ok := strings.Cut(rest, ":")
		if !ok {
			continue
		}
		switch {
		case id == "0" && ctrls == "":
			v2Path, haveV2 = path, true
		case slices.Contains(strings.Split(ctrls, ","), "memory"):
			memPath, haveMem = path, true
		}
	}
	var info Info
	for _, m := range parseMounts(mountinfo) {
		switch {
		case m.v2 && haveV2 && info.V2 == "":
			info.V2 = within(m, v2Path)
		case !m.v2 && haveMem && info.V1Memory == "" && slices.Contains(m.options, "memory"):
			info.V1Memory = within(m, memPath)
		}
	}
	return info
}

// within returns the directory of group path under mount m, "" when the
// mount does not show it.
func within(m mount, path string) string {
	rel, ok := strings.CutPrefix(path, m.root)
	if !ok || (rel != "" && !strings.HasPrefix(rel, "/") && m.root != "/") {
		return ""
	}
	return filepath.Join(m.point, rel)
}

// parseMounts returns the cgroup and cgroup2 mounts of a mountinfo file.
func parseMounts(mountinfo []byte) []mount {
	var out []mount
	sc := bufio.NewScanner(bytes.NewReader(mountinfo))
	for sc.Scan() {
		// id parent major:minor root mountpoint options... - fstype source super
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		f, p := strings.Fields(pre), strings.Fields(post)
		if len(f) < 5 || len(p) < 1 || (p[0] != "cgroup" && p[0] != "cgroup2") {
			continue
		}
		m := mount{root: unescape(f[3]), point: unescape(f[4]), v2: p[0] == "cgroup2"}
		if len(p) >= 3 {
			m.options = strings.Split(p[2], ",")
		}
		out = append(out, m)
	}
	return out
}

// unescape undoes mountinfo's octal escapes (\040 for a space).
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// memoryController says which controller limits a child group of info.
func memoryController(info Info) (Controller, string) {
	var reasons []string
	if info.V2 != "" {
		ok, why := v2Memory(info.V2)
		if ok {
			return MemoryV2, ""
		}
		reasons = append(reasons, why)
	} else {
		reasons = append(reasons, "no cgroup v2 hierarchy shows this process")
	}
	if info.V1Memory != "" {
		if err := unix.Access(info.V1Memory, unix.W_OK); err != nil {
			return MemoryNone, strings.Join(append(reasons, fmt.Sprintf("the cgroup v1 memory group %s is not writable (%v)", info.V1Memory, err)), "; ")
		}
		return MemoryV1, ""
	}
	return MemoryNone, strings.Join(append(reasons, "no cgroup v1 memory controller is mounted"), "; ")
}

// v2Memory reports whether children of dir get the memory controller,
// enabling it when it can.
func v2Memory(dir string) (bool, string) {
	ctrls, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
	if err != nil {
		return false, fmt.Sprintf("cgroup v2 group %s: %v", dir, err)
	}
	if !slices.Contains(strings.Fields(string(ctrls)), "memory") {
		return false, fmt.Sprintf("the cgroup v2 group %s has no memory controller (it is not delegated, or bound to cgroup v1)", dir)
	}
	sub, err := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control"))
	if err == nil && slices.Contains(strings.Fields(string(sub)), "memory") {
		return true, ""
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte("+memory"), 0); err != nil {
		return false, fmt.Sprintf("cannot enable the memory controller for children of the cgroup v2 group %s (%v): it holds processes of its own or is not delegated to this user", dir, err)
	}
	return true, ""
}

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

// dirs returns the group's directories.
func (g *Group) dirs() []string {
	var out []string
	for _, d := range []string{g.V2, g.V1Memory} {
		if d != "" {
			out = append(out, d)
		}
	}
	return out
}

// Join moves the calling process into every directory of the group. A
// confining shim calls it before it executes the plugin, so the plugin
// and everything it starts are in the group from their first instruction.
func (g *Group) Join() error {
	pid := strconv.Itoa(os.Getpid())
	for _, d := range g.dirs() {
		if err := writeFile(d, "cgroup.procs", pid); err != nil {
			return fmt.Errorf("joining cgroup %s: %w", d, err)
		}
	}
	return nil
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
	for _, d := range g.dirs() {
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

// Remove deletes the group's directories, retrying for up to half a second
// while the kernel releases its last processes. A group that still holds
// processes after that is an error (the directory stays).
func (g *Group) Remove() error {
	var errs []error
	for _, d := range g.dirs() {
		errs = append(errs, Remove(d))
	}
	return errors.Join(errs...)
}

// Remove deletes one group directory as Group.Remove does.
func Remove(dir string) error {
	var err error
	for range 50 {
		if err = unix.Rmdir(dir); err == nil || errors.Is(err, unix.ENOENT) {
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	return fmt.Errorf("remove cgroup %s: %w", dir, err)
}

// RemoveTree deletes the group dir and the child groups under it (a
// command's own, such as a nested run's), deepest first, each as Remove
// does. A group with no child groups costs one rmdir.
func RemoveTree(dir string) error {
	if err := unix.Rmdir(dir); err == nil || errors.Is(err, unix.ENOENT) {
		return nil
	}
	var dirs []string
	_ = filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err == nil && e.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	slices.Reverse(dirs)
	var errs []error
	for _, d := range dirs {
		errs = append(errs, Remove(d))
	}
	return errors.Join(errs...)
}

// Sweep removes the empty child groups of parent whose names start with
// one of prefixes and that are older than age: groups a killed process
// could not remove. A group in use (with processes) is left alone, and so
// is one younger than age, which another process may be about to join. A
// matching group that still has child groups (those a killed plugin's
// commands were put in, sdk/command) has its empty ones older than age
// removed first, deepest first, so one orphaned command group does not
// keep its plugin's group forever.
//
// The age is the directory's modification time, which cgroupfs sets when
// it first shows the directory after making it or after dropping it from
// its cache: a lower bound of the group's age, so a group is never removed
// younger than age.
func Sweep(parent string, age time.Duration, prefixes ...string) {
	// Read in directory order: os.ReadDir's sort by name was half the
	// sweep's CPU under a parent with thousands of groups.
	d, err := os.Open(parent)
	if err != nil {
		return
	}
	entries, err := d.ReadDir(-1)
	d.Close()
	if err != nil {
		return
	}
	cutoff := time.Now().Add(-age)
	for _, e := range entries {
		if !e.IsDir() || !hasAnyPrefix(e.Name(), prefixes) {
			continue
		}
		sweepGroup(filepath.Join(parent, e.Name()), e, cutoff)
	}
}

// sweepGroup removes dir (entry e) when it is empty and older than cutoff,
// after removing such child groups of its own when it has any.
func sweepGroup(dir string, e os.DirEntry, cutoff time.Time) {
	st, err := e.Info()
	if err != nil || st.ModTime().After(cutoff) {
		return
	}
	// EBUSY: processes or child groups. Only the second can change here.
	if err := unix.Rmdir(dir); !errors.Is(err, unix.EBUSY) {
		return
	}
	children, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	nested := false
	for _, c := range children {
		if c.IsDir() {
			nested = true
			sweepGroup(filepath.Join(dir, c.Name()), c, cutoff)
		}
	}
	if nested {
		_ = unix.Rmdir(dir)
	}
}

// hasAnyPrefix reports whether name starts with one of prefixes.
func hasAnyPrefix(name string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}
