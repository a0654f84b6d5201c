package proc

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Info is what /proc/<pid>/stat tells about a process.
type Info struct {
	Proc
	// State is field 3: R, S, D, Z (zombie), X (dead), ...
	State byte
	// RSSPages is field 24, resident set size in pages.
	RSSPages int64
	// Name is the command name (field 2, without parentheses).
	Name string
}

// Alive reports whether the process still runs: a zombie or dead entry has
// released everything but its pid.
func (i Info) Alive() bool { return i.State != 'Z' && i.State != 'X' }

// ErrBadStat is returned by Parse for a line that is not a stat line.
var ErrBadStat = errors.New("malformed /proc stat line")

// Parse parses one /proc/<pid>/stat line. The command name is in
// parentheses and may itself hold spaces and parentheses, so fields are
// counted from the last ')'.
func Parse(line []byte) (Info, error) {
	open := bytes.IndexByte(line, '(')
	closing := bytes.LastIndexByte(line, ')')
	if open <= 0 || closing < open {
		return Info{}, ErrBadStat
	}
	pid, err := strconv.Atoi(string(bytes.TrimSpace(line[:open])))
	if err != nil {
		return Info{}, ErrBadStat
	}
	// Fields after the name start at field 3 (state).
	f := strings.Fields(string(line[closing+1:]))
	if len(f) < 22 || len(f[0]) != 1 {
		return Info{}, ErrBadStat
	}
	i := Info{Proc: Proc{PID: pid}, State: f[0][0], Name: string(line[open+1 : closing])}
	if i.PPID, err = strconv.Atoi(f[1]); err != nil {
		return Info{}, ErrBadStat
	}
	if i.PGID, err = strconv.Atoi(f[2]); err != nil {
		return Info{}, ErrBadStat
	}
	if i.StartTime, err = strconv.ParseUint(f[19], 10, 64); err != nil { // field 22
		return Info{}, ErrBadStat
	}
	if i.RSSPages, err = strconv.ParseInt(f[21], 10, 64); err != nil { // field 24
		return Info{}, ErrBadStat
	}
	return i, nil
}

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

// HasEntry reports whether the NUL-separated list env contains kv as a
// whole entry; a kv with a NUL byte is never an entry.
func HasEntry(env []byte, kv string) bool {
	if kv == "" || strings.IndexByte(kv, 0) >= 0 {
		return false
	}
	needle := []byte(kv)
	for from := 0; from < len(env); {
		i := bytes.Index(env[from:], needle)
		if i < 0 {
			return false
		}
		start := from + i
		end := start + len(needle)
		if (start == 0 || env[start-1] == 0) && (end == len(env) || env[end] == 0) {
			return true
		}
		from = start + 1
	}
	return false
}
