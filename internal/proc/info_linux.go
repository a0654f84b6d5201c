package proc

import (
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// Read reads /proc/<pid>/stat, zombies included.
func Read(pid int) (Info, error) {
	var r reader
	return r.info(pid)
}

// PIDs returns the numeric entries of /proc.
func PIDs() ([]int, error) {
	d, err := os.Open("/proc")
	if err != nil {
		return nil, err
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	pids := make([]int, 0, len(names))
	for _, n := range names {
		if n == "" || n[0] < '0' || n[0] > '9' {
			continue
		}
		if pid, err := strconv.Atoi(n); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// EnvironHas reports whether /proc/<pid>/environ holds the exact entry kv
// ("NAME=value"). Unreadable environments (other users, kernel threads)
// report false.
func EnvironHas(pid int, kv string) bool {
	var r reader
	return r.environHas(pid, kv)
}

// reader reads small /proc files into one buffer that it grows and keeps,
// with plain open, read and close system calls (no *os.File, no
// finalizer), so that a scan of every process on the machine allocates
// once: the watchdog scans after every worker (Marked, MarkedTree).
type reader struct{ buf []byte }

// read returns the contents of the file at path, valid until the next
// read.
func (r *reader) read(path string) ([]byte, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	for err == unix.EINTR {
		fd, err = unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	}
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	if r.buf == nil {
		r.buf = make([]byte, 0, 4<<10)
	}
	b := r.buf[:0]
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := unix.Read(fd, b[len(b):cap(b)])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			r.buf = b
			return nil, &os.PathError{Op: "read", Path: path, Err: err}
		}
		if n == 0 {
			break
		}
		b = b[:len(b)+n]
	}
	r.buf = b
	return b, nil
}

// info reads /proc/<pid>/stat.
func (r *reader) info(pid int) (Info, error) {
	b, err := r.read("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return Info{}, err
	}
	return Parse(b)
}

// environHas is EnvironHas through r.
func (r *reader) environHas(pid int, kv string) bool {
	b, err := r.read("/proc/" + strconv.Itoa(pid) + "/environ")
	return err == nil && HasEntry(b, kv)
}
