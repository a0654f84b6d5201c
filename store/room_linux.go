package store

import "golang.org/x/sys/unix"

// freeBytes returns the bytes an unprivileged writer may still use on the
// file system holding f (fstatfs(2): f_bavail × f_bsize), and false when
// f is not an operating-system file or the call fails.
func freeBytes(f File) (int64, bool) {
	of, ok := f.(osFile)
	if !ok {
		return 0, false
	}
	var st unix.Statfs_t
	if err := unix.Fstatfs(int(of.Fd()), &st); err != nil {
		return 0, false
	}
	return int64(st.Bavail) * st.Bsize, true
}
