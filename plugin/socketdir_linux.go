package plugin

import (
	"bytes"
	"encoding/binary"

	"golang.org/x/sys/unix"
)

// direntBufSize is the buffer eachName reads directory entries into: one
// getdents64(2) call returns about 200 entries of socket directory names.
const direntBufSize = 8 << 10

// eachName calls fn with the name of every directory in dir (and every
// entry whose type the file system does not report), read with
// getdents64(2) in batches into one buffer: no allocation per entry. name
// is valid only during the call. fn may remove the entry it is given.
// Errors end the listing: a sweep tries again next time.
func eachName(dir string, fn func(name []byte)) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	defer unix.Close(fd)
	buf := make([]byte, direntBufSize)
	for {
		n, err := unix.Getdents(fd, buf)
		if err != nil || n <= 0 {
			return
		}
		// struct linux_dirent64: d_ino u64, d_off s64, d_reclen u16,
		// d_type u8, d_name NUL-terminated.
		for off := 0; off+19 <= n; {
			reclen := int(binary.NativeEndian.Uint16(buf[off+16:]))
			if reclen < 19 || off+reclen > n {
				return
			}
			name := buf[off+19 : off+reclen]
			if i := bytes.IndexByte(name, 0); i >= 0 {
				name = name[:i]
			}
			if t := buf[off+18]; t == unix.DT_DIR || t == unix.DT_UNKNOWN {
				fn(name)
			}
			off += reclen
		}
	}
}
