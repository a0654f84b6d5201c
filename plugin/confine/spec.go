package confine

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Spec is what one plugin may do, as the host resolved it from the run
// file's confine block and its defaults. Every path is absolute.
type Spec struct {
	// Write lists the trees the plugin may write: the workspace root, the
	// run's scratch directory, the plugin's state directory and the
	// paths the run file declares.
	Write []string `json:"write,omitempty"`
	// Own lists the trees the plugin owns: writable even inside a Protect
	// tree (the run's scratch directory and the plugin's state directory
	// inside the storage directory), though not inside a DenyRead tree.
	Own []string `json:"own,omitempty"`
	// Protect lists the trees that are never writable whatever Write says:
	// the storage directory (records, locks, other runs) and the plugin
	// cache.
	Protect []string `json:"protect,omitempty"`
	// DenyRead lists the trees the plugin may not read (nor write).
	DenyRead []string `json:"deny_read,omitempty"`
	// Network allows TCP connect and bind; false denies both (Landlock
	// ABI 4 and later).
	Network bool `json:"network"`
	// MemoryBytes limits the memory (and swap) of the plugin and its
	// descendants, in bytes; 0 = no limit.
	MemoryBytes int64 `json:"memory_bytes,omitempty"`
	// GroupTag, when not "", is put in the name of the memory group
	// (TaggedPrefix), as plugin.LaunchConfig.GroupTag is in a bare
	// group's, so that a run's keeper stops the group whole
	// (plugin.StopTaggedGroups) once both its supervisors died.
	GroupTag string `json:"-"`
}

// Rule grants access beneath one path.
type Rule struct {
	// Path is absolute, with no symbolic link in it.
	Path string `json:"path"`
	// Write grants writing as well as reading and executing.
	Write bool `json:"write,omitempty"`
	// File says Path is not a directory: only the rights a file can carry
	// (read, execute, write, truncate, device ioctl) are granted.
	File bool `json:"file,omitempty"`
}

// Rules are a Spec expanded into the allow-list a shim applies.
type Rules struct {
	// Paths are the granted paths, reads first, in the order they were
	// found.
	Paths []Rule `json:"paths"`
	// Network allows TCP connect and bind.
	Network bool `json:"network"`
	// MemoryBytes is Spec.MemoryBytes.
	MemoryBytes int64 `json:"memory_bytes,omitempty"`
	// Dropped lists the Write trees that were not granted because they lie
	// in a protected or denied tree.
	Dropped []string `json:"dropped,omitempty"`
	// Split lists the directories of Write trees that were granted entry
	// by entry because a protected or denied tree lies beneath them: no
	// new entry can be made directly in them.
	Split []string `json:"split,omitempty"`
	// ReadOnly lists the protected trees the shim mounts read-only in the
	// plugin's own mount namespace (mount mode only); Rebind the owned
	// trees inside them it mounts writable again.
	ReadOnly []string `json:"read_only,omitempty"`
	Rebind   []string `json:"rebind,omitempty"`
}

// Devices are the device files every confined plugin may write.
var Devices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"}

// ErrPath is wrapped by Build for a path that is not absolute.
var ErrPath = errors.New("confinement path must be absolute")

// Build expands s into Rules (see the package documentation). Paths are
// resolved through their symbolic links first (a path that does not
// exist yet by its longest existing ancestor). A relative path is an
// error wrapping ErrPath; a Write tree that does not exist is skipped.
//
// With mountNS the protected trees are not split out of the Write trees
// by the rules but listed in ReadOnly, for the shim to mount read-only in
// the plugin's own mount namespace, and the owned trees inside them in
// Rebind; without it the Write trees are split around them.
func Build(s Spec, mountNS bool) (*Rules, error) {
	deny, err := resolveAll(s.DenyRead)
	if err != nil {
		return nil, err
	}
	protect, err := resolveAll(s.Protect)
	if err != nil {
		return nil, err
	}
	write, err := resolveAll(s.Write)
	if err != nil {
		return nil, err
	}
	own, err := resolveAll(s.Own)
	if err != nil {
		return nil, err
	}
	r := &Rules{Network: s.Network, MemoryBytes: s.MemoryBytes, Paths: []Rule{}}
	r.expand("/", deny, false)
	excluded := append(append([]string{}, protect...), deny...)
	splitAround := excluded
	if mountNS {
		splitAround = deny
		for _, p := range dedupe(protect) {
			if st, err := os.Stat(p); err == nil && st.IsDir() && !covered(p, r.ReadOnly) {
				r.ReadOnly = append(r.ReadOnly, p)
			}
		}
		for _, o := range dedupe(own) {
			if covered(o, r.ReadOnly) && !covered(o, deny) {
				r.Rebind = append(r.Rebind, o)
			}
		}
	}
	for _, w := range dedupe(write) {
		if covered(w, excluded) {
			r.Dropped = append(r.Dropped, w)
			continue
		}
		r.expand(w, splitAround, true)
	}
	for _, o := range dedupe(own) {
		if covered(o, deny) {
			r.Dropped = append(r.Dropped, o)
			continue
		}
		r.expand(o, deny, true)
	}
	for _, d := range Devices {
		if _, err := os.Stat(d); err == nil {
			r.Paths = append(r.Paths, Rule{Path: d, Write: true, File: true})
		}
	}
	return r, nil
}

// expand grants root, or, when an excluded tree lies beneath it, each of
// its entries in turn. A root at or beneath an excluded tree gets nothing.
func (r *Rules) expand(root string, excluded []string, write bool) {
	if covered(root, excluded) {
		return
	}
	if !holds(root, excluded) {
		st, err := os.Stat(root)
		if err != nil {
			return
		}
		r.Paths = append(r.Paths, Rule{Path: root, Write: write, File: !st.IsDir()})
		return
	}
	if write {
		r.Split = append(r.Split, root)
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		return
	}
	for _, e := range entries {
		if e.Type()&fs.ModeSymlink != 0 {
			continue
		}
		r.expand(filepath.Join(root, e.Name()), excluded, write)
	}
}

// within reports whether p is base or beneath it.
func within(p, base string) bool {
	if base == "/" {
		return true
	}
	return p == base || strings.HasPrefix(p, base+"/")
}

// covered reports whether p is at or beneath one of trees.
func covered(p string, trees []string) bool {
	return slices.ContainsFunc(trees, func(t string) bool { return within(p, t) })
}

// holds reports whether one of trees lies strictly beneath p.
func holds(p string, trees []string) bool {
	return slices.ContainsFunc(trees, func(t string) bool { return t != p && within(t, p) })
}

func dedupe(paths []string) []string {
	var out []string
	for _, p := range paths {
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

func resolveAll(paths []string) ([]string, error) {
	out := make([]string, 0, len(paths))
	for _, p := range paths {
		rp, err := Resolve(p)
		if err != nil {
			return nil, err
		}
		out = append(out, rp)
	}
	return out, nil
}

// Resolve returns p cleaned and with its symbolic links resolved; a path
// that does not exist is resolved by its longest existing ancestor. A
// relative p is an error wrapping ErrPath.
func Resolve(p string) (string, error) {
	if !filepath.IsAbs(p) {
		return "", fmt.Errorf("%w: %q", ErrPath, p)
	}
	p = filepath.Clean(p)
	var rest []string
	for {
		if rp, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Join(append([]string{rp}, rest...)...), nil
		}
		parent := filepath.Dir(p)
		if parent == p {
			return filepath.Join(append([]string{p}, rest...)...), nil
		}
		rest = append([]string{filepath.Base(p)}, rest...)
		p = parent
	}
}
