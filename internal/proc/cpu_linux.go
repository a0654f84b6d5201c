package proc

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// SelfSleeps returns how many times this process's threads, all of them,
// gave up their CPU to wait (getrusage's voluntary context switches):
// each is a wait for I/O, a lock, a timer or another thread's wake-up, so
// the count measures hand-offs between threads without depending on how
// busy the machine is.
func SelfSleeps() (int64, error) {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0, err
	}
	return ru.Nvcsw, nil
}

// SelfCPU returns this process's CPU time, user and system, all threads
// (getrusage).
func SelfCPU() (time.Duration, error) {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0, err
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}

// CPU returns the CPU time process pid's threads have used: the sum of
// the first field (ns on a CPU) of /proc/PID/task/*/schedstat, which,
// unlike /proc/PID/stat, is not rounded to clock ticks. Threads that ended
// are not counted. The error is ErrGone when the process has no threads
// to read (it exited).
func CPU(pid int) (time.Duration, error) {
	tasks, err := filepath.Glob(filepath.Join("/proc", strconv.Itoa(pid), "task", "*", "schedstat"))
	if err != nil {
		return 0, err
	}
	if len(tasks) == 0 {
		return 0, ErrGone
	}
	var sum time.Duration
	for _, t := range tasks {
		raw, err := os.ReadFile(t)
		if err != nil {
			continue // the thread ended meanwhile
		}
		f := strings.Fields(string(raw))
		if len(f) == 0 {
			continue
		}
		ns, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s: %q: %w", t, raw, err)
		}
		sum += time.Duration(ns)
	}
	return sum, nil
}
