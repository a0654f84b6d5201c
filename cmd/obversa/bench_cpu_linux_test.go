package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// cpuUsed returns the CPU time (user and system) this process and the
// process pid have used so far: getrusage for this one, the sum of
// /proc/PID/task/*/schedstat (ns) for the other. CPU time per call moves
// far less than wall time on a machine others load (docs/decisions.md,
// "Benchmarks").
func cpuUsed(b *testing.B, pid int) (self, other time.Duration) {
	b.Helper()
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	self = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	tasks, err := filepath.Glob(filepath.Join("/proc", strconv.Itoa(pid), "task", "*", "schedstat"))
	if err != nil || len(tasks) == 0 {
		b.Fatalf("reading the CPU time of process %d: %v", pid, err)
	}
	for _, t := range tasks {
		raw, err := os.ReadFile(t)
		if err != nil {
			continue // the thread ended meanwhile
		}
		fields := strings.Fields(string(raw))
		if len(fields) == 0 {
			continue
		}
		ns, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			b.Fatalf("%s: %q: %v", t, raw, err)
		}
		other += time.Duration(ns)
	}
	return self, other
}
