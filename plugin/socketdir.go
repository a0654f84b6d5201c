package plugin

import (
	"fmt"
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

	baseOnce    sync.Once
	socketBase  string
	baseErr     error
	baseIsFresh bool
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
			socketErr = fmt.Errorf("no directory for plugin sockets in %s: %w", base, socketErr)
		}
	})
	return socketHome, socketErr
}

// baseDir returns the short directory private to this user that holds
// the socket directories of every process launching plugins, chosen once
// per process: /tmp/obversa-<uid> when that is a directory owned by this
// user and closed to others, else a fresh directory under /tmp, else
// under os.TempDir(). Choosing once keeps a process whose shared
// directory is not private from making a fresh one at every call.
func baseDir() (string, error) {
	baseOnce.Do(func() {
		uid := os.Getuid()
		dir := filepath.Join("/tmp", "obversa-"+strconv.Itoa(uid))
		if err := os.Mkdir(dir, 0o700); err == nil || os.IsExist(err) {
			if privateDir(dir, uid) {
				socketBase = dir
				return
			}
		}
		for _, parent := range []string{"/tmp", os.TempDir()} {
			if d, err := os.MkdirTemp(parent, "obversa-"); err == nil {
				socketBase, baseIsFresh = d, true
				return
			}
		}
		baseErr = fmt.Errorf("no directory for plugin sockets: /tmp and %s are not writable", os.TempDir())
	})
	return socketBase, baseErr
}

// SweepSockets removes the plugin socket directories that processes which
// ended left behind (a worker killed with its plugins): each is removed
// only once no living process holds its lock. The watchdog runs it when
// it starts carrying a run and after stopping a worker's processes; no
// worker runs it, so its listing never allocates beside the executor.
// A fresh fallback directory (baseDir) holds no one else's, so it is not
// listed. Errors are ignored: what cannot be removed now is tried again
// next time.
func SweepSockets() {
	base, err := baseDir()
	if err != nil || baseIsFresh {
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
