package command

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// procRoot is the proc filesystem mount; tests never change it.
const procRoot = "/proc"

// procStat is the part of /proc/<pid>/stat the runner needs.
type procStat struct {
	pid, ppid, pgid int
	state           byte
	start           uint64 // clock ticks after boot
	rssPages        int64
	name            string
}

// alive reports whether the process still runs: a zombie (Z) or dead (X)
// entry has released everything but its pid.
func (s procStat) alive() bool { return s.state != 'Z' && s.state != 'X' }

func (s procStat) process() Process {
	return Process{PID: s.pid, PPID: s.ppid, PGID: s.pgid, StartTime: s.start, Name: s.name}
}

var errBadStat = errors.New("malformed /proc stat line")

// parseStat parses one /proc/<pid>/stat line. The command name is in
// parentheses and may itself contain spaces and parentheses, so fields are
// counted from the last ')'.
func parseStat(line []byte) (procStat, error) {
	open := bytes.IndexByte(line, '(')
	closing := bytes.LastIndexByte(line, ')')
	if open <= 0 || closing < open {
		return procStat{}, errBadStat
	}
	pid, err := strconv.Atoi(string(bytes.TrimSpace(line[:open])))
	if err != nil {
		return procStat{}, errBadStat
	}
	// Fields after the name start at field 3 (state).
	f := strings.Fields(string(line[closing+1:]))
	if len(f) < 22 || len(f[0]) != 1 {
		return procStat{}, errBadStat
	}
	s := procStat{pid: pid, state: f[0][0], name: string(line[open+1 : closing])}
	if s.ppid, err = strconv.Atoi(f[1]); err != nil {
		return procStat{}, errBadStat
	}
	if s.pgid, err = strconv.Atoi(f[2]); err != nil {
		return procStat{}, errBadStat
	}
	if s.start, err = strconv.ParseUint(f[19], 10, 64); err != nil { // field 22
		return procStat{}, errBadStat
	}
	if s.rssPages, err = strconv.ParseInt(f[21], 10, 64); err != nil { // field 24
		return procStat{}, errBadStat
	}
	return s, nil
}

// readStat reads /proc/<pid>/stat.
func readStat(pid int) (procStat, error) {
	b, err := os.ReadFile(procRoot + "/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, err
	}
	s, err := parseStat(b)
	if err != nil {
		return procStat{}, fmt.Errorf("pid %d: %w", pid, err)
	}
	return s, nil
}

// listPIDs returns the numeric entries of /proc.
func listPIDs() ([]int, error) {
	d, err := os.Open(procRoot)
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

// snapshot reads the stat of every process. Processes that vanish while
// reading are skipped.
func snapshot() (map[int]procStat, error) {
	pids, err := listPIDs()
	if err != nil {
		return nil, err
	}
	all := make(map[int]procStat, len(pids))
	for _, pid := range pids {
		if s, err := readStat(pid); err == nil {
			all[pid] = s
		}
	}
	return all, nil
}

// environHas reports whether /proc/<pid>/environ holds the exact entry kv
// ("NAME=value"). Unreadable environments (other users, kernel threads)
// report false.
func environHas(pid int, kv string) bool {
	b, err := os.ReadFile(procRoot + "/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return false
	}
	return hasEntry(b, kv)
}

// hasEntry reports whether the NUL-separated list env contains kv as a
// whole entry; a kv with a NUL byte is never an entry.
func hasEntry(env []byte, kv string) bool {
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
