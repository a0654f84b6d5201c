package plugin

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"
)

// envUnixSocketDir is the variable go-plugin's host passes the socket
// directory in; a plugin makes its socket there (Serve, or go-plugin's
// own server).
const envUnixSocketDir = "PLUGIN_UNIX_SOCKET_DIR"

// maxSocketPath is the longest unix socket path Linux binds: sun_path holds
// 108 bytes with the terminating NUL.
const maxSocketPath = 107

// hostDirPrefix begins the name of a launching process's directory in the
// socket base: "h<pid>-<random>". newDirPrefix begins it while it is made,
// before it is locked (socketdir_unix.go).
const (
	hostDirPrefix = "h"
	newDirPrefix  = ".new-"
)

var (
	socketOnce sync.Once
	socketHome string
	socketErr  error

	baseOnce   sync.Once
	socketBase string
	baseErr    error
)

// socketDir returns this process's directory for plugin sockets, made on
// the first call: a directory of its own in the short base directory
// baseDir picks, locked for as long as the process lives. go-plugin makes
// each plugin's directory in it ("plugin-dirNNN", holding the socket
// "pluginNNN": about 75 bytes in all, far below maxSocketPath whatever
// TMPDIR is) and removes that when the plugin ends. What a process that
// died left there is removed by SweepSockets, which the watchdog runs
// (docs/decisions.md, "Plugin socket directories").
func socketDir() (string, error) {
	socketOnce.Do(func() {
		base, err := baseDir()
		if err != nil {
			socketErr = err
			return
		}
		if socketHome, socketErr = makeOwnDir(base); socketErr != nil {
			socketErr = fmt.Errorf("%w in %s: %w", ErrSocketDir, base, socketErr)
		}
	})
	return socketHome, socketErr
}

// maxBaseLen is the longest base directory baseDir accepts: what a
// plugin's socket path adds to it is about 60 bytes ("/h<pid>-<random>",
// "/plugin-dirNNN", "/pluginNNN"), and the whole must fit maxSocketPath.
const maxBaseLen = maxSocketPath - 60

// baseDir returns the short directory private to this user that holds
// the socket directories of every process launching plugins, chosen once
// per process by chooseBase among baseCandidates. Every process of a user
// picks the same one, so what one left is swept by the next watchdog.
func baseDir() (string, error) {
	baseOnce.Do(func() {
		socketBase, baseErr = chooseBase(baseCandidates(os.Getuid()), os.Getuid())
	})
	return socketBase, baseErr
}

// baseCandidates lists the base directories baseDir tries, in order:
// /tmp/obversa-<uid>, then $XDG_RUNTIME_DIR/obversa when that variable
// names an absolute directory (the per-user directory meant for
// sockets).
func baseCandidates(uid int) []string {
	dirs := []string{filepath.Join("/tmp", "obversa-"+strconv.Itoa(uid))}
	if rt := os.Getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(rt) {
		dirs = append(dirs, filepath.Join(rt, "obversa"))
	}
	return dirs
}

// chooseBase returns the first of candidates that is, or can be made, a
// directory owned by uid and closed to others (privateProblem), no longer
// than maxBaseLen. When none is, it returns fallbackBase's: an error
// wrapping ErrSocketDir that names the first candidate, what is wrong
// with it and how to fix it (unix), or a fresh temporary directory
// (elsewhere, where ownership is not checked and nothing is swept).
func chooseBase(candidates []string, uid int) (string, error) {
	problems := make([]string, 0, len(candidates))
	for _, dir := range candidates {
		if len(dir) > maxBaseLen {
			problems = append(problems, fmt.Sprintf("%s is longer than %d bytes", dir, maxBaseLen))
			continue
		}
		if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			problems = append(problems, err.Error())
			continue
		}
		p := privateProblem(dir, uid)
		if p == "" {
			return dir, nil
		}
		problems = append(problems, p)
	}
	return fallbackBase(candidates[0], problems)
}

// SweepSockets removes the plugin socket directories that processes which
// ended left behind (a worker killed with its plugins): each is removed
// only once no living process holds its lock. The watchdog runs it when
// it starts carrying a run and after stopping a worker's processes; no
// worker runs it, so its listing never allocates beside the executor.
// Its listing allocates a bounded amount however many entries the
// directory holds (sweepDead). Errors are ignored: what cannot be removed
// now is tried again next time.
func SweepSockets() {
	base, err := baseDir()
	if err != nil {
		return
	}
	sweepDead(base)
}

// socketDirOf names the directory of plugin sockets for messages.
func socketDirOf(LaunchConfig) string {
	d, _ := socketDir()
	return d
}

// removeSockets removes a plugin's socket directory dir, if any, with
// whatever the plugin left in it.
func removeSockets(dir string) {
	if dir != "" {
		_ = os.RemoveAll(dir)
	}
}
