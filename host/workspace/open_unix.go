//go:build unix

package workspace

import (
	"errors"
	"hash"
	"io/fs"

	"golang.org/x/sys/unix"
)

// readRegular streams the regular file at path into h, using buf, and
// returns its permission bits (including setuid, setgid and sticky) and
// the number of bytes read. The file is opened without following a final
// symlink (an error isSymlinkRefused recognises) and without blocking on a
// FIFO, and its type is checked on the open descriptor: anything but a
// regular file is errNotRegular, so a path swapped after the listing is
// never read as a file. Plain system calls, not os.File, keep a small file
// to open, fstat, read, read, close.
func readRegular(path string, h hash.Hash, buf []byte) (perm uint32, n int64, err error) {
	var fd int
	for {
		fd, err = unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		return 0, 0, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return 0, 0, &fs.PathError{Op: "fstat", Path: path, Err: err}
	}
	if uint32(st.Mode)&unix.S_IFMT != unix.S_IFREG {
		return 0, 0, errNotRegular
	}
	for {
		m, err := unix.Read(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return 0, 0, &fs.PathError{Op: "read", Path: path, Err: err}
		}
		if m == 0 {
			return uint32(st.Mode) & modePermMask, n, nil
		}
		h.Write(buf[:m])
		n += int64(m)
	}
}

// isSymlinkRefused reports whether err is O_NOFOLLOW's answer for a
// symlink (ELOOP; EMLINK on the BSDs).
func isSymlinkRefused(err error) bool {
	return errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EMLINK)
}
