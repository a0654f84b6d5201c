//go:build unix

package plugin

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// ownLock is this process's open, flock(2)ed socket directory: held
// until the process ends, when the kernel releases the lock, which is how
// a sweep knows the directory's owner is gone. Its descriptor is closed
// on exec, so no plugin inherits the lock.
var ownLock *os.File

// makeOwnDirTries bounds the attempts to make the directory when a
// concurrent sweep removes it before it was locked.
const makeOwnDirTries = 5

// privateDir reports whether dir is a real directory (not a link) owned
// by uid with no access for group or others.
func privateDir(dir string, uid int) bool {
	st, err := os.Lstat(dir)
	if err != nil || !st.IsDir() || st.Mode().Perm()&0o077 != 0 {
		return false
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	return ok && int(sys.Uid) == uid
}

// makeOwnDir makes this process's directory in base: made under a
// temporary name, locked, then renamed to h<pid>-<random>, so a sweep
// never finds it under its final name unlocked while its owner lives. A
// sweep may remove it before it is locked; then it is made again.
func makeOwnDir(base string) (string, error) {
	var err error
	for range makeOwnDirTries {
		var dir string
		if dir, err = makeLockedDir(base); err == nil {
			return dir, nil
		}
	}
	return "", err
}

// makeLockedDir is one attempt of makeOwnDir.
func makeLockedDir(base string) (string, error) {
	tmp, err := os.MkdirTemp(base, newDirPrefix)
	if err != nil {
		return "", err
	}
	f, err := os.Open(tmp)
	if err != nil {
		return "", err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		return "", err
	}
	dir := filepath.Join(base, hostDirPrefix+strconv.Itoa(os.Getpid())+"-"+strings.TrimPrefix(filepath.Base(tmp), newDirPrefix))
	if err := os.Rename(tmp, dir); err != nil {
		_ = f.Close()
		return "", err
	}
	ownLock = f
	return dir, nil
}

// sweepDead removes every process directory in base (and every one still
// under its temporary name) whose lock it can take: its owner is gone.
func sweepDead(base string) {
	entries, err := os.ReadDir(base)
	if err != nil {
		return
	}
	for _, e := range entries {
		if e.IsDir() && processDir(e.Name()) {
			removeUnlocked(filepath.Join(base, e.Name()))
		}
	}
}

// processDir reports whether name is a process's directory as
// makeLockedDir names it, under its final or its temporary name.
func processDir(name string) bool {
	if strings.HasPrefix(name, newDirPrefix) {
		return true
	}
	pid, _, ok := strings.Cut(strings.TrimPrefix(name, hostDirPrefix), "-")
	_, err := strconv.Atoi(pid)
	return ok && err == nil && strings.HasPrefix(name, hostDirPrefix)
}

// removeUnlocked removes dir if no process holds its lock, holding the
// lock while it removes it.
func removeUnlocked(dir string) {
	f, err := os.Open(dir)
	if err != nil {
		return
	}
	defer f.Close()
	if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil {
		_ = os.RemoveAll(dir)
	}
}
