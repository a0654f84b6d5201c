package proc

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// Stat reads the identity of a live process. A zombie counts as gone.
func Stat(pid int) (Proc, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return Proc{}, err
	}
	return parseStat(b)
}

// parseStat parses /proc/<pid>/stat; the command name may hold spaces and
// parentheses, so fields are counted from the last ')'.
func parseStat(b []byte) (Proc, error) {
	open := bytes.IndexByte(b, '(')
	end := bytes.LastIndexByte(b, ')')
	if open < 0 || end < open {
		return Proc{}, fmt.Errorf("malformed stat line")
	}
	pid, err := strconv.Atoi(string(bytes.TrimSpace(b[:open])))
	if err != nil {
		return Proc{}, fmt.Errorf("malformed stat pid: %w", err)
	}
	f := bytes.Fields(b[end+1:])
	// f[0] is field 3 (state); start time is field 22.
	if len(f) < 20 {
		return Proc{}, fmt.Errorf("short stat line")
	}
	if f[0][0] == 'Z' || f[0][0] == 'X' {
		return Proc{}, os.ErrNotExist
	}
	ppid, _ := strconv.Atoi(string(f[1]))
	pgid, _ := strconv.Atoi(string(f[2]))
	st, err := strconv.ParseUint(string(f[19]), 10, 64)
	if err != nil {
		return Proc{}, fmt.Errorf("malformed stat start time: %w", err)
	}
	return Proc{PID: pid, PPID: ppid, PGID: pgid, StartTime: st}, nil
}

// Alive reports whether p still runs as the same process (same start time).
func Alive(p Proc) bool {
	cur, err := Stat(p.PID)
	return err == nil && cur.StartTime == p.StartTime
}

// Signal sends sig to p only if p is still the same process.
func Signal(p Proc, sig unix.Signal) error {
	if !Alive(p) {
		return nil
	}
	err := unix.Kill(p.PID, sig)
	if err == unix.ESRCH {
		return nil
	}
	return err
}

// Marked lists the live processes whose environment holds exactly the
// entry kv ("NAME=value"), leaving out the pids in exclude.
func Marked(kv string, exclude map[int]bool) ([]Proc, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	needle := []byte(kv)
	var out []Proc
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || exclude[pid] {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil || !hasEntry(env, needle) {
			continue
		}
		p, err := Stat(pid)
		if err != nil {
			continue
		}
		out = append(out, p)
	}
	return out, nil
}

func hasEntry(env, kv []byte) bool {
	for _, e := range bytes.Split(env, []byte{0}) {
		if bytes.Equal(e, kv) {
			return true
		}
	}
	return false
}

// Stop sends SIGTERM to every process, waits up to grace for them to
// leave, sends SIGKILL to the rest, waits briefly again and returns the
// processes still alive (same start time). A pid whose start time changed
// is never signalled.
func Stop(ctx context.Context, procs []Proc, grace time.Duration) []Proc {
	for _, p := range procs {
		_ = Signal(p, unix.SIGTERM)
		_ = Signal(p, unix.SIGCONT)
	}
	left := waitGone(ctx, procs, grace)
	for _, p := range left {
		_ = Signal(p, unix.SIGKILL)
	}
	return waitGone(context.Background(), left, 2*time.Second)
}

func waitGone(ctx context.Context, procs []Proc, d time.Duration) []Proc {
	deadline := time.Now().Add(d)
	for {
		var left []Proc
		for _, p := range procs {
			if Alive(p) {
				left = append(left, p)
			}
		}
		if len(left) == 0 || time.Now().After(deadline) || ctx.Err() != nil {
			return left
		}
		time.Sleep(pollInterval)
		procs = left
	}
}

// SetChildSubreaper makes the calling process adopt orphaned descendants,
// so a grandchild that double-forks still reparents to it.
func SetChildSubreaper() error {
	return unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
}
