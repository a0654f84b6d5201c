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
	socketBase string
	socketHome string
	socketErr  error
)

// socketDir returns this process's directory for plugin sockets, made on
// the first call: a directory of its own in the short base directory
// baseDir picks, locked for as long as the process lives. go-plugin makes
// each plugin's directory in it ("plugin-dirNNN", holding the socket
// "pluginNNN": about 75 bytes in all, far below maxSocketPath whatever
// TMPDIR is) and removes that when the plugin ends. What a process that
// died left there is removed by the next process that makes its own
// directory, in the background, and by SweepSockets
// (docs/decisions.md, "Plugin socket directories").
func socketDir() (string, error) {
	socketOnce.Do(func() {
		if socketBase, socketErr = baseDir(); socketErr != nil {
			return
		}
		if socketHome, socketErr = makeOwnDir(socketBase); socketErr != nil {
			socketErr = fmt.Errorf("no directory for plugin sockets in %s: %w", socketBase, socketErr)
			return
		}
		go sweepDead(socketBase)
	})
	return socketHome, socketErr
}

// baseDir returns the short directory private to this user that holds
// the socket directories of every process launching plugins: it is
// /tmp/obversa-<uid> when that is a directory owned by this user and
// closed to others, else a fresh directory under /tmp, else under
// os.TempDir().
func baseDir() (string, error) {
	uid := os.Getuid()
	dir := filepath.Join("/tmp", "obversa-"+strconv.Itoa(uid))
	if err := os.Mkdir(dir, 0o700); err == nil || os.IsExist(err) {
		if privateDir(dir, uid) {
			return dir, nil
		}
	}
	for _, parent := range []string{"/tmp", os.TempDir()} {
		if d, err := os.MkdirTemp(parent, "obversa-"); err == nil {
			return d, nil
		}
	}
	return "", fmt.Errorf("no directory for plugin sockets: /tmp and %s are not writable", os.TempDir())
}

// SweepSockets removes the plugin socket directories that processes which
// ended left behind (a worker killed with its plugins): each is removed
// only once no living process holds its lock. It is what the watchdog
// runs after stopping a worker's processes; a process that launches
// plugins runs it by itself once, when it makes its own directory. Errors
// are ignored: what cannot be removed now is tried again next time.
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
