//go:build unix

package plugin

import (
	"bytes"
	"fmt"
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

// privateProblem says what keeps dir from being a private directory of
// uid: not a real directory (a link, a file), owned by someone else, or
// open to group or others; "" when it is one.
func privateProblem(dir string, uid int) string {
	st, err := os.Lstat(dir)
	if err != nil {
		return err.Error()
	}
	if !st.IsDir() {
		return fmt.Sprintf("%s is not a directory (%s)", dir, st.Mode().Type())
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); !ok || int(sys.Uid) != uid {
		owner := "unknown"
		if ok {
			owner = strconv.Itoa(int(sys.Uid))
		}
		return fmt.Sprintf("%s is owned by uid %s, not %d", dir, owner, uid)
	}
	if perm := st.Mode().Perm(); perm&0o077 != 0 {
		return fmt.Sprintf("%s has mode %#o, open to group or others", dir, perm)
	}
	return ""
}

// fallbackBase refuses: a fresh directory made instead would be a new one
// in every process, which no sweep finds. The error names first and how
// to make it private, or, since one owned by another user cannot be
// removed from a sticky /tmp, to set XDG_RUNTIME_DIR instead.
func fallbackBase(first string, problems []string) (string, error) {
	return "", fmt.Errorf("%w: %s; remove %s (or, if it is yours, chmod 700 it) so it is made again private to uid %d, "+
		"or set XDG_RUNTIME_DIR to a directory of yours with mode 0700",
		ErrSocketDir, strings.Join(problems, "; "), first, os.Getuid())
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
// The names are read in batches into one buffer (eachName), so a base
// full of others' entries costs no allocation per entry.
func sweepDead(base string) {
	eachName(base, func(name []byte) {
		if processDir(name) {
			removeUnlocked(filepath.Join(base, string(name)))
		}
	})
}

// processDir reports whether name is a process's directory as
// makeLockedDir names it, under its final or its temporary name.
// It reads name in place, without a copy.
func processDir(name []byte) bool {
	if bytes.HasPrefix(name, []byte(newDirPrefix)) {
		return true
	}
	pid, _, ok := bytes.Cut(bytes.TrimPrefix(name, []byte(hostDirPrefix)), []byte("-"))
	if !ok || len(pid) == 0 || !bytes.HasPrefix(name, []byte(hostDirPrefix)) {
		return false
	}
	for _, c := range pid {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
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
