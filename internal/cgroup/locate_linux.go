package cgroup

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

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
