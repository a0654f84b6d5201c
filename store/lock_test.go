package store

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestLockInProcess(t *testing.T) {
	// Not parallel: a child forked by another test shares every
	// descriptor until it execs, which can briefly keep a released lock.
	r := newUnownedRun(t, Policy{})
	l, err := r.Lock(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	other, err := OpenRunDir(context.Background(), r.Dir(), Policy{})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	_, err = other.Lock(context.Background())
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
	h, found, err := readHolder(OS(), r.Dir())
	if err != nil || !found || h.PID != self.PID {
		t.Fatalf("ReadHolder = %+v, %v, %v", h, found, err)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	l2, err := other.Lock(context.Background())
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
	r := newUnownedRun(t, Policy{})
	l, err := r.Lock(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=hold")
	env, files := l.Handoff()
	cmd.Env = append(cmd.Env, env...)
	cmd.ExtraFiles = files
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	l.Release()
	if _, err := r.Lock(context.Background()); !errors.Is(err, ErrProcessLocked) {
		t.Fatalf("Lock while the child holds the inherited descriptor: %v", err)
	}
	in.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	l2, err := r.Lock(context.Background())
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
	r := newUnownedRun(t, Policy{})
	h := startHelper(t, "lock", "STORE_DIR="+r.Dir())
	if got := h.line(t); got != "locked" {
		t.Fatalf("helper: %s", got)
	}
	_, err := r.Lock(context.Background())
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
	l, err := r.Lock(context.Background())
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
	if _, found, err := readHolder(OS(), dir); found || err != nil {
		t.Fatalf("no lock file: found %v, err %v", found, err)
	}
	writeFile(t, filepath.Join(dir, lockFile), nil)
	if _, found, err := readHolder(OS(), dir); found || err != nil {
		t.Fatalf("empty lock file: found %v, err %v", found, err)
	}
	writeFile(t, filepath.Join(dir, lockFile), []byte("garbage"))
	if _, _, err := readHolder(OS(), dir); err == nil {
		t.Fatal("garbage holder record: no error")
	}
}

// TestOwnership: only a handle holding the run's ownership writes; a
// released ownership writes no more; a read-only handle takes none.
func TestOwnership(t *testing.T) {
	ctx := context.Background()
	r := newUnownedRun(t, Policy{})
	ev := NewEvent{Type: "test:owned"}
	if _, err := r.Append(ctx, 0, ev); !errors.Is(err, ErrNotOwner) || Code(err) != "NOT_OWNER" {
		t.Fatalf("Append without ownership: %v", err)
	}
	if _, err := r.PutArtifact(ctx, []byte("x"), "text/plain", "t"); !errors.Is(err, ErrNotOwner) {
		t.Fatalf("PutArtifact without ownership: %v", err)
	}
	own, err := r.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if h := own.Holder(); h.PID != os.Getpid() || own.Epoch() != 0 {
		t.Fatalf("holder %+v epoch %d", h, own.Epoch())
	}
	other, err := OpenRunDir(ctx, r.Dir(), Policy{})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := other.Append(ctx, 0, ev); !errors.Is(err, ErrNotOwner) {
		t.Fatalf("Append through another handle of the same process: %v", err)
	}
	if _, err := r.Append(ctx, 0, ev); err != nil {
		t.Fatalf("Append by the owner: %v", err)
	}
	if err := own.Release(); err != nil {
		t.Fatal(err)
	}
	if err := own.Release(); err != nil {
		t.Fatalf("second Release: %v", err)
	}
	if env, files := own.Handoff(); env != nil || files != nil {
		t.Fatalf("Handoff after Release = %v, %v", env, files)
	}
	if _, err := r.Append(ctx, 1, ev); !errors.Is(err, ErrNotOwner) {
		t.Fatalf("Append after Release: %v", err)
	}
	ro, err := OpenRunDirReadOnly(ctx, r.Dir())
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if _, err := ro.Lock(ctx); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("Lock of a read-only handle: %v", err)
	}
	if _, err := ro.Append(ctx, 1, ev); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("Append through a read-only handle: %v", err)
	}
}

// TestAdopt hands the run's ownership to a child process, which adopts it
// and appends; the lock stays held while the child lives. A child handed
// nothing, or another run's lock, is refused with NOT_OWNER.
func TestAdopt(t *testing.T) {
	// Not parallel: a child forked by another test shares every
	// descriptor until it execs, which can briefly keep a released lock.
	ctx := context.Background()
	r := newUnownedRun(t, Policy{})
	own, err := r.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	env, files := own.Handoff()
	h := startHelperFiles(t, "adopt", files, append(env, "STORE_DIR="+r.Dir())...)
	if got := h.line(t); got != "ok 1 env= cloexec=true" {
		t.Fatalf("child: %q, want it to append rev 1, unset %s and mark the descriptor close-on-exec", got, LockFDEnv)
	}
	own.Release()
	if _, err := r.Lock(ctx); !errors.Is(err, ErrProcessLocked) {
		t.Fatalf("Lock while the child holds the adopted lock: %v", err)
	}
	h.in.Close()
	if err := h.cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	own2, err := r.Lock(ctx)
	if err != nil {
		t.Fatalf("Lock after the child exited: %v", err)
	}
	defer own2.Release()
	if evs := readAll(t, r.events); len(evs) != 1 || evs[0].Type != "test:adopted" {
		t.Fatalf("events %v", evs)
	}

	// Nothing handed over.
	h = startHelper(t, "adopt", "STORE_DIR="+r.Dir(), LockFDEnv+"=")
	if got := h.line(t); got != "err NOT_OWNER" {
		t.Fatalf("child handed nothing: %q", got)
	}
	// Another run's lock.
	o := newUnownedRun(t, Policy{})
	oown, err := o.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer oown.Release()
	env, files = oown.Handoff()
	h = startHelperFiles(t, "adopt", files, append(env, "STORE_DIR="+r.Dir())...)
	if got := h.line(t); got != "err NOT_OWNER" {
		t.Fatalf("child handed another run's lock: %q", got)
	}
	// This run's lock file, but a descriptor that does not hold the lock.
	f, err := os.Open(filepath.Join(r.Dir(), lockFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h = startHelperFiles(t, "adopt", []*os.File{f}, "STORE_DIR="+r.Dir(), LockFDEnv+"=3")
	if got := h.line(t); got != "err NOT_OWNER" {
		t.Fatalf("child handed a descriptor without the lock: %q", got)
	}
}

// TestUnreadableHolderRecord: a lock file whose holder record cannot be
// parsed is an error naming the file, and the flock decides what it
// means. While a process holds the lock the run is owned by someone who
// cannot be named (Holder says so, Lock refuses naming the file); once the
// lock is free the record is stale (Held false), and the next Lock, which
// holds the flock, rewrites it.
func TestUnreadableHolderRecord(t *testing.T) {
	// Not parallel: a child forked by another test shares every
	// descriptor until it execs, which can briefly keep a released lock.
	ctx := context.Background()
	r := newUnownedRun(t, Policy{})
	path := filepath.Join(r.Dir(), lockFile)
	garbage := []byte("not a holder record\n")

	writeFile(t, path, garbage)
	_, found, err := r.Holder(ctx)
	var hre *HolderRecordError
	if !errors.As(err, &hre) || found || hre.Held || hre.Path != path || !strings.Contains(err.Error(), "stale") {
		t.Fatalf("Holder of an unheld garbage record: found %v, %v; want a stale *HolderRecordError naming %s", found, err, path)
	}
	if !bytes.Equal(readBytes(t, path), garbage) {
		t.Fatal("reading the holder record changed the lock file")
	}

	l, err := r.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, path, garbage) // damaged while held
	_, _, err = r.Holder(ctx)
	if !errors.As(err, &hre) || !hre.Held || !strings.Contains(err.Error(), "fuser -v "+path) {
		t.Fatalf("Holder of a held garbage record: %v; want a held *HolderRecordError saying how to find the holder", err)
	}
	other, err := OpenRunDir(ctx, r.Dir(), Policy{})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	_, err = other.Lock(ctx)
	var le *LockedError
	if !errors.As(err, &le) || le.Known || le.Unreadable == "" || !strings.Contains(err.Error(), path) {
		t.Fatalf("Lock of a run held under a garbage record: %v; want PROCESS_LOCKED naming the unreadable %s", err, path)
	}
	if !bytes.Equal(readBytes(t, path), garbage) {
		t.Fatal("a refused Lock changed the lock file")
	}

	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	l2, err := other.Lock(ctx)
	if err != nil {
		t.Fatalf("Lock of a free run with a stale garbage record: %v", err)
	}
	defer l2.Release()
	h, found, err := r.Holder(ctx)
	if err != nil || !found || h.PID != os.Getpid() {
		t.Fatalf("after Lock: %+v %v %v; want the record rewritten for this process", h, found, err)
	}
}

// TestLockNotAFile: a run lock that is a directory or a named pipe is a
// *StorageError naming it and saying how to make it a file again, for the
// writer that takes the run and for a reader of its holder alike.
func TestLockNotAFile(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"directory", "named pipe"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			r := newTestRun(t, Policy{})
			path := filepath.Join(r.Dir(), lockFile)
			err := os.RemoveAll(path)
			if err != nil {
				t.Fatal(err)
			}
			if kind == "directory" {
				err = os.Mkdir(path, 0o755)
			} else {
				err = syscall.Mkfifo(path, 0o644)
			}
			if err != nil {
				t.Fatal(err)
			}
			_, lockErr := r.Lock(context.Background())
			_, _, readErr := r.Holder(context.Background())
			for what, err := range map[string]error{"Lock": lockErr, "Holder": readErr} {
				var se *StorageError
				if !errors.As(err, &se) || !strings.Contains(err.Error(), "rm -r "+path) || strings.Count(err.Error(), path) != 2 {
					t.Errorf("%s of a run whose lock is a %s = %v; want a StorageError naming it once and saying to remove it", what, kind, err)
				}
			}
		})
	}
}
