package cgroup

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Remove deletes the group's directories, retrying for up to half a second
// while the kernel releases its last processes. A group that still holds
// processes after that is an error (the directory stays).
func (g *Group) Remove() error {
	var errs []error
	for _, d := range g.Dirs() {
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
