package store

import (
	"bytes"
	"os"
	"strconv"
	"strings"
)

// processStartTime returns field 22 of /proc/<pid>/stat (start time in
// clock ticks since boot). ok is false if there is no such process or it is
// a zombie (it has exited and only waits to be reaped).
func processStartTime(pid int) (uint64, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	// The command name (field 2) is in parentheses and may contain spaces
	// and ')'; the fields after the last ')' start with field 3 (state).
	k := bytes.LastIndexByte(b, ')')
	if k < 0 {
		return 0, false
	}
	fields := strings.Fields(string(b[k+1:]))
	if len(fields) < 20 || fields[0] == "Z" || fields[0] == "X" {
		return 0, false
	}
	st, err := strconv.ParseUint(fields[19], 10, 64)
	if err != nil {
		return 0, false
	}
	return st, true
}

// bootID returns this boot's id, "" if unknown.
func bootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
