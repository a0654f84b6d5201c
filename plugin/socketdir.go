package plugin

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	goplugin "github.com/hashicorp/go-plugin"
)

// envUnixSocketDir is the variable go-plugin passes the socket directory
// in; a plugin built on go-plugin creates its socket there.
const envUnixSocketDir = goplugin.EnvUnixSocketDir

// maxSocketPath is the longest unix socket path Linux binds: sun_path holds
// 108 bytes with the terminating NUL.
const maxSocketPath = 107

var (
	socketOnce sync.Once
	socketBase string
	socketErr  error
)

// socketDir returns a short directory private to this user in which
// go-plugin makes each plugin's socket directory, so that the socket path
// ("<dir>/plugin-dirNNN/pluginNNN", about 60 bytes) stays far below
// maxSocketPath whatever TMPDIR is. It is /tmp/obversa-<uid> when that is a
// directory owned by this user and closed to others, else a fresh
// directory under /tmp, else under os.TempDir().
func socketDir() (string, error) {
	socketOnce.Do(func() {
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
				socketBase = d
				return
			}
		}
		socketErr = fmt.Errorf("no directory for plugin sockets: /tmp and %s are not writable", os.TempDir())
	})
	return socketBase, socketErr
}

// socketDirOf names the base directory of plugin sockets for messages.
func socketDirOf(LaunchConfig) string {
	d, _ := socketDir()
	return d
}
