package store

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestLockInProcess(t *testing.T) {
	// Not parallel: a child forked by another test shares every
	// descriptor until it execs, which can briefly keep a released lock.
	r := newTestRun(t, Policy{})
	l, err := r.Lock()
	if err != nil {
		t.Fatal(err)
	}
	other, err := OpenRunDir(context.Background(), r.Dir(), Policy{})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	_, err = other.Lock()
	var le *LockedError
	if !errors.As(err, &le) || !errors.Is(err, ErrProcessLocked) || Code(err) != "PROCESS_LOCKED" {
		t.Fatalf("second Lock: %v, want a *LockedError", err)
	}
	self := CurrentHolder()
	if !le.Known || le.Holder.PID != self.PID || le.Holder.BootID != self.BootID || le.Holder.StartTime != self.StartTime {
		t.Fatalf("holder %+v, want this process %+v", le.Holder, self)
	}
	if !strings.Contains(err.Error(), "pid ") || !HolderAlive(le.Holder) {
		t.Errorf("error %q should name the pid; holder alive = %v", err, HolderAlive(le.Holder))
	}
	h, found, err := ReadHolder(r.Dir())
	if err != nil || !found || h.PID != self.PID {
		t.Fatalf("ReadHolder = %+v, %v, %v", h, found, err)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	l2, err := other.Lock()
	if err != nil {
		t.Fatalf("Lock after Release: %v", err)
	}
	l2.Release()
}

// TestLockHeldByChild hands the lock's descriptor to a child process: after
// the parent releases its descriptor the lock stays held until the child
// exits.
func TestLockHeldByChild(t *testing.T) {
	// Not parallel: a child forked by another test shares every
	// descriptor until it execs, which can briefly keep a released lock.
	r := newTestRun(t, Policy{})
	l, err := r.Lock()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=hold")
	cmd.ExtraFiles = []*os.File{l.File()}
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	l.Release()
	if _, err := r.Lock(); !errors.Is(err, ErrProcessLocked) {
		t.Fatalf("Lock while the child holds the inherited descriptor: %v", err)
	}
	in.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	l2, err := r.Lock()
	if err != nil {
		t.Fatalf("Lock after the child exited: %v", err)
	}
	l2.Release()
}

// TestLockOtherProcess has a helper process take the lock; this process is
// refused and names it; once it exits its record reads as dead.
func TestLockOtherProcess(t *testing.T) {
	// Not parallel: a child forked by another test shares every
	// descriptor until it execs, which can briefly keep a released lock.
	r := newTestRun(t, Policy{})
	h := startHelper(t, "lock", "STORE_DIR="+r.Dir())
	if got := h.line(t); got != "locked" {
		t.Fatalf("helper: %s", got)
	}
	_, err := r.Lock()
	var le *LockedError
	if !errors.As(err, &le) || le.Holder.PID != h.cmd.Process.Pid {
		t.Fatalf("Lock: %v, want locked by helper pid %d", err, h.cmd.Process.Pid)
	}
	if !HolderAlive(le.Holder) {
		t.Fatalf("HolderAlive(%+v) = false for a running holder", le.Holder)
	}
	h.in.Close()
	if err := h.cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if HolderAlive(le.Holder) {
		t.Fatalf("HolderAlive(%+v) = true after it exited", le.Holder)
	}
	l, err := r.Lock()
	if err != nil {
		t.Fatal(err)
	}
	l.Release()
}

func TestHolderAlive(t *testing.T) {
	t.Parallel()
	self := CurrentHolder()
	exited := exec.Command(os.Args[0], "-test.run=^$")
	exited.Env = append(os.Environ(), helperEnv+"=exit")
	if err := exited.Run(); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		h    Holder
		want bool
	}{
		{"self", self, true},
		{"pid reused (other start time)", Holder{PID: self.PID, StartTime: self.StartTime + 1, BootID: self.BootID}, false},
		{"other boot", Holder{PID: self.PID, StartTime: self.StartTime, BootID: "00000000-0000-0000-0000-000000000000"}, false},
		{"exited process", Holder{PID: exited.Process.Pid, StartTime: self.StartTime, BootID: self.BootID}, false},
		{"no pid", Holder{BootID: self.BootID}, false},
	}
	for _, tt := range tests {
		if got := HolderAlive(tt.h); got != tt.want {
			t.Errorf("%s: HolderAlive = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestReadHolder(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if _, found, err := ReadHolder(dir); found || err != nil {
		t.Fatalf("no lock file: found %v, err %v", found, err)
	}
	writeFile(t, filepath.Join(dir, lockFile), nil)
	if _, found, err := ReadHolder(dir); found || err != nil {
		t.Fatalf("empty lock file: found %v, err %v", found, err)
	}
	writeFile(t, filepath.Join(dir, lockFile), []byte("garbage"))
	if _, _, err := ReadHolder(dir); err == nil {
		t.Fatal("garbage holder record: no error")
	}
}
