package confine

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"

	"github.com/obversa/obversa/internal/cgroup"
)

// GroupPrefix starts the name of every plugin's cgroup.
const GroupPrefix = "obversa-plugin-"

// TaggedPrefix starts the name of a plugin's cgroup made for a launch
// with tag (Spec.GroupTag, plugin.LaunchConfig.GroupTag): GroupPrefix,
// then tag and "-" when tag is not "".
func TaggedPrefix(tag string) string {
	if tag == "" {
		return GroupPrefix
	}
	return GroupPrefix + tag + "-"
}

// ErrUnavailable is wrapped by Prepare when the confinement is required
// and the kernel cannot enforce all of it; the message lists what is
// missing.
var ErrUnavailable = errors.New("CONFINEMENT_UNAVAILABLE")

// Prepared is one plugin's confinement ready to start: its rules built
// and its cgroup made. Release it once the plugin has exited.
type Prepared struct {
	rules   *Rules
	support Support
	group   *cgroup.Group
	// Missing lists what the kernel could not enforce (Support.Missing).
	Missing []string
}

// Prepare builds s's rules and, when s limits memory and the kernel can,
// makes the plugin's cgroup. With required, anything the kernel cannot
// enforce (Support.Missing) is an error wrapping ErrUnavailable naming it;
// otherwise it is left out and listed in Prepared.Missing. Errors from
// Build and from making the cgroup are returned as they are.
func Prepare(s Spec, sup Support, required bool) (*Prepared, error) {
	missing := sup.Missing(s)
	if required && len(missing) > 0 {
		return nil, Unavailable(missing)
	}
	r, err := Build(s, sup.MountNS)
	if err != nil {
		return nil, err
	}
	p := &Prepared{rules: r, support: sup, Missing: missing}
	if s.MemoryBytes > 0 && sup.Cgroup.Memory != cgroup.MemoryNone {
		for _, parent := range []string{sup.Cgroup.V2, sup.Cgroup.V1Memory} {
			if parent != "" {
				cgroup.Sweep(parent, cgroup.SweepAge, GroupPrefix, cgroup.CommandPrefix)
			}
		}
		g, err := cgroup.Create(sup.Cgroup, TaggedPrefix(s.GroupTag)+randomID(), cgroup.Options{LimitBytes: s.MemoryBytes})
		if err != nil {
			return nil, fmt.Errorf("memory cgroup: %w", err)
		}
		p.group = g
	}
	return p, nil
}

// Unavailable returns the error of a required confinement the kernel
// cannot give: it wraps ErrUnavailable and lists what is missing.
func Unavailable(missing []string) error {
	return fmt.Errorf("%w: confine { required = true }, but this kernel cannot enforce: %s", ErrUnavailable, strings.Join(missing, "; "))
}

// Rules returns the expanded rules.
func (p *Prepared) Rules() *Rules { return p.rules }

// Command returns the command that starts the verified binary path with
// args confined: the running binary as the shim, which joins the cgroup,
// applies the rules (with extraWrite added, such as the plugin's socket
// directory) and executes path. The caller sets Env and the process
// attributes and closes cmd.ExtraFiles once it started.
func (p *Prepared) Command(path string, args []string, extraWrite ...string) (*exec.Cmd, error) {
	return p.CommandFile(nil, path, args, extraWrite...)
}

// CommandFile is Command for a binary the caller has open and verified:
// the shim executes exe (through /proc/self/fd; closed on exec for a
// binary, kept open for a "#!" script, whose interpreter opens it by that
// name) rather than looking path up again, so a file renamed over path in
// between is not what runs; path stays the plugin's argv[0]. A nil exe
// executes path.
func (p *Prepared) CommandFile(exe *os.File, path string, args []string, extraWrite ...string) (*exec.Cmd, error) {
	r := *p.rules
	r.Paths = slices.Clone(r.Paths)
	for _, d := range extraWrite {
		if rd, err := Resolve(d); err == nil {
			r.Paths = append(r.Paths, Rule{Path: rd, Write: true})
		}
	}
	return shimCommand(payload{Exec: path, Rules: &r, ABI: p.support.LandlockABI, Cgroup: p.group}, exe, args)
}

// Unshareflags returns the namespaces the shim must start in: a mount
// namespace of its own when protected trees are mounted read-only there.
func (p *Prepared) Unshareflags() uintptr {
	if len(p.rules.ReadOnly) > 0 {
		return unshareMountNS
	}
	return 0
}

// LimitBytes returns the memory limit in force, 0 when none.
func (p *Prepared) LimitBytes() int64 {
	if p == nil || p.group == nil {
		return 0
	}
	return p.group.LimitBytes
}

// OOMKills returns how many processes of the plugin's cgroup the kernel's
// OOM killer has ended; 0 without a memory limit.
func (p *Prepared) OOMKills() uint64 {
	if p == nil || p.group == nil {
		return 0
	}
	return p.group.OOMKills()
}

// Kill SIGKILLs every process of the plugin's cgroup at once (cgroup.kill
// of the v2 group), whatever session or process group it moved to; a
// no-op without a group or a v2 directory.
func (p *Prepared) Kill() {
	if p != nil && p.group != nil {
		p.group.Kill()
	}
}

// HasV2Group reports whether the plugin's cgroup has a v2 directory, which
// Kill stops whole; false for nil.
func (p *Prepared) HasV2Group() bool { return p != nil && p.group != nil && p.group.V2 != "" }

// Procs returns the pids still in the plugin's cgroup; nil without one.
func (p *Prepared) Procs() []int {
	if p == nil || p.group == nil {
		return nil
	}
	return p.group.Procs()
}

// Release removes the plugin's cgroup, once its processes are gone.
func (p *Prepared) Release() error {
	if p == nil || p.group == nil {
		return nil
	}
	return p.group.Remove()
}

func randomID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
