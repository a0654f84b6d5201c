package command

import (
	"os"
	"strconv"
	"syscall"
)

// pipeHolders returns the processes other than this one that hold an end
// of any of the given pipes open, found by reading every /proc/<pid>/fd
// link ("pipe:[<inode>]"); processes of other users are not visible to an
// unprivileged caller. Ordered by pid.
func pipeHolders(pipes ...*os.File) []Process {
	want := map[string]bool{}
	for _, f := range pipes {
		fi, err := f.Stat()
		if err != nil {
			continue
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			want["pipe:["+strconv.FormatUint(st.Ino, 10)+"]"] = true
		}
	}
	pids, err := listPIDs()
	if len(want) == 0 || err != nil {
		return nil
	}
	self := os.Getpid()
	var out []Process
	for _, pid := range pids {
		if pid != self && holdsAny(pid, want) {
			if s, err := readStat(pid); err == nil && s.alive() {
				out = append(out, s.process())
			}
		}
	}
	sortProcesses(out)
	return out
}

// holdsAny reports whether process pid has a file descriptor open on one
// of the targets (readlink values of /proc/<pid>/fd entries).
func holdsAny(pid int, targets map[string]bool) bool {
	dir := "/proc/" + strconv.Itoa(pid) + "/fd/"
	d, err := os.Open(dir)
	if err != nil {
		return false
	}
	names, _ := d.Readdirnames(-1)
	_ = d.Close()
	for _, n := range names {
		if link, err := os.Readlink(dir + n); err == nil && targets[link] {
			return true
		}
	}
	return false
}
