//go:build unix

package plugin

import (
	"os"
	"syscall"
)

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
