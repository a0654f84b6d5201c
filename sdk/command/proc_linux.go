package command

import (
	"fmt"

	"github.com/obversa/obversa/internal/proc"
)

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

// errBadStat is the parser's error for a line that is not a stat line.
var errBadStat = proc.ErrBadStat

func fromInfo(i proc.Info) procStat {
	return procStat{pid: i.PID, ppid: i.PPID, pgid: i.PGID, state: i.State, start: i.StartTime, rssPages: i.RSSPages, name: i.Name}
}

// parseStat parses one /proc/<pid>/stat line (proc.Parse).
func parseStat(line []byte) (procStat, error) {
	i, err := proc.Parse(line)
	if err != nil {
		return procStat{}, err
	}
	return fromInfo(i), nil
}

// readStat reads /proc/<pid>/stat.
func readStat(pid int) (procStat, error) {
	i, err := proc.Read(pid)
	if err != nil {
		return procStat{}, fmt.Errorf("pid %d: %w", pid, err)
	}
	return fromInfo(i), nil
}

// listPIDs returns the numeric entries of /proc.
func listPIDs() ([]int, error) { return proc.PIDs() }

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

// environHas reports whether /proc/<pid>/environ holds the exact entry kv.
func environHas(pid int, kv string) bool { return proc.EnvironHas(pid, kv) }

// hasEntry reports whether the NUL-separated list env contains kv as a
// whole entry.
func hasEntry(env []byte, kv string) bool { return proc.HasEntry(env, kv) }
