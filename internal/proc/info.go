package proc

import (
	"bytes"
	"errors"
	"strconv"
	"strings"
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
