package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/obversa/obversa/internal/regfile"
	"github.com/obversa/obversa/internal/shellquote"
)

// lockFile is the run lock's file name inside the run directory.
const lockFile = "lock"

// Holder identifies the process that took a run lock. It is
// recorded in <rundir>/lock so that a process refused the lock can name the
// holder, and so that HolderAlive can tell a live holder from a dead one
// whose pid was reused.
type Holder struct {
	PID       int       `json:"pid"`
	StartTime uint64    `json:"start_time"` // /proc/<pid>/stat field 22, clock ticks since boot
	BootID    string    `json:"boot_id"`    // /proc/sys/kernel/random/boot_id
	Host      string    `json:"host"`       // HostName: $OBVERSA_HOST, else os.Hostname
	StartedAt time.Time `json:"started_at"` // when the lock was taken
}

// CurrentHolder describes the calling process (its host named by
// HostName), with StartedAt set to now.
// Fields the platform cannot provide are left zero.
func CurrentHolder() Holder {
	self := selfProcess()
	return Holder{
		PID:       os.Getpid(),
		StartTime: self.startTime,
		BootID:    self.bootID,
		Host:      HostName(),
		StartedAt: time.Now().UTC(),
	}
}

var selfProcess = sync.OnceValue(func() procIdentity {
	st, _ := processStartTime(os.Getpid())
	return procIdentity{startTime: st, bootID: bootID()}
})

type procIdentity struct {
	startTime uint64
	bootID    string
}

// LockFDEnv names the environment variable through which a parent hands
// its run lock to a child (Ownership.Handoff): the number of the inherited
// descriptor that holds it. Run.Adopt reads it and then unsets it, so
// that it does not reach the child's own children.
const LockFDEnv = "OBVERSA_LOCK_FD"

// runLock is the file backend's Ownership: flock(2) on <rundir>/lock. The
// lock belongs to the open file description, so it is held while any
// process keeps a descriptor for it — a child given the descriptor
// (Handoff) keeps it held while either process lives; the kernel frees it
// when the last descriptor closes.
type runLock struct {
	run    *Run
	holder Holder

	mu sync.Mutex
	f  File // nil once released

	// Set up by the first Lost (lock_removed.go).
	lostOnce sync.Once
	lost     chan struct{} // closed once the run's record is removed
	released chan struct{} // closed by Release: the look ends
	cause    error         // why lost was closed; written before it is
}

// Lock takes the run's ownership without waiting: flock(LOCK_EX|LOCK_NB)
// on <rundir>/lock. If another open file description holds it, it returns
// a *LockedError (ErrProcessLocked) naming the holder recorded in the lock
// file. On success it records CurrentHolder() in the file, and writes
// through r are allowed until the ownership is released. Errors also:
// ErrClosed, ErrReadOnly, I/O errors.
func (r *Run) Lock(ctx context.Context) (Ownership, error) {
	if err := r.writable(ctx); err != nil {
		return nil, err
	}
	path := filepath.Join(r.dir, lockFile)
	f, err := r.fsys.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, lockFileErr("open", path, err)
	}
	if err := f.Lock(true, false); err != nil {
		f.Close()
		if isWouldBlock(err) {
			h, known, herr := readHolder(r.fsys, r.dir)
			le := &LockedError{Dir: r.dir, Holder: h, Known: known}
			var hre *HolderRecordError
			if errors.As(herr, &hre) {
				le.Unreadable = hre.Problem
			}
			return nil, le
		}
		return nil, storageErr("lock", path, err)
	}
	h := CurrentHolder()
	rec, _ := json.Marshal(h)
	rec = append(rec, '\n')
	err = f.Truncate(0)
	if err == nil {
		_, err = f.Write(rec)
	}
	if err != nil {
		f.Close()
		return nil, storageErr("write", path, err)
	}
	return r.own(f, h), nil
}

// Adopt takes over the run lock a parent handed to this process: the
// descriptor named by LockFDEnv, which must be this run's lock file and
// must hold its lock. The descriptor is marked close-on-exec (plugins and
// their commands never inherit it, so no survivor of the run keeps it
// locked) and LockFDEnv is unset. Errors: ErrNotOwner (nothing handed
// over, another file, or the lock is held by another open file
// description), ErrClosed, ErrReadOnly.
func (r *Run) Adopt(ctx context.Context) (Ownership, error) {
	if err := r.writable(ctx); err != nil {
		return nil, err
	}
	if _, ok := r.fsys.(osFS); !ok {
		return nil, fmt.Errorf("%w: run %s: a run lock can be handed over only on the operating system's file system", ErrNotOwner, r.dir)
	}
	v := os.Getenv(LockFDEnv)
	fd, err := strconv.Atoi(v)
	if err != nil || fd < 3 {
		return nil, fmt.Errorf("%w: run %s: no run lock was handed to this process (%s=%q)", ErrNotOwner, r.dir, LockFDEnv, v)
	}
	path := filepath.Join(r.dir, lockFile)
	f := os.NewFile(uintptr(fd), path)
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("%w: run %s: descriptor %d handed over in %s: %v", ErrNotOwner, r.dir, fd, LockFDEnv, err)
	}
	li, err := os.Stat(path)
	if err != nil || !os.SameFile(fi, li) {
		return nil, fmt.Errorf("%w: run %s: descriptor %d handed over in %s is not this run's lock file", ErrNotOwner, r.dir, fd, LockFDEnv)
	}
	syscall.CloseOnExec(fd)
	// Asking again for the lock the descriptor's open file description
	// holds succeeds at once; another holder means it was not handed over.
	lf := osFile{f}
	if err := lf.Lock(true, false); err != nil {
		return nil, fmt.Errorf("%w: run %s: the descriptor handed over does not hold the run lock: %v", ErrNotOwner, r.dir, err)
	}
	os.Unsetenv(LockFDEnv)
	h, _, _ := readHolder(r.fsys, r.dir)
	return r.own(lf, h), nil
}

// writable checks that r may take ownership.
func (r *Run) writable(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := r.usable(); err != nil {
		return err
	}
	if r.events.ro {
		return fmt.Errorf("%w: %s", ErrReadOnly, r.dir)
	}
	return nil
}

// own makes the lock held through f the ownership writes through r go
// under.
func (r *Run) own(f File, h Holder) *runLock {
	l := &runLock{run: r, holder: h, f: f}
	r.mu.Lock()
	r.owner = l
	r.mu.Unlock()
	return l
}

// Holder describes the process that took the lock (for an adopted lock,
// the parent that took it, as recorded in the lock file).
func (l *runLock) Holder() Holder { return l.holder }

// Epoch is 0: the kernel enforces the file lock, nothing else fences.
func (l *runLock) Epoch() int64 { return 0 }

// Handoff returns LockFDEnv=3 and the locked file: pass the file as the
// first of exec.Cmd.ExtraFiles (it becomes descriptor 3) and the entry in
// exec.Cmd.Env, and the child's Run.Adopt takes the lock over. Both then
// hold it until the last of them releases it or exits. After Release, or
// on a file system other than the operating system's (WithFS), it returns
// nothing.
func (l *runLock) Handoff() ([]string, []*os.File) {
	l.mu.Lock()
	defer l.mu.Unlock()
	of, ok := l.f.(osFile)
	if !ok {
		return nil, nil
	}
	return []string{LockFDEnv + "=3"}, []*os.File{of.File}
}

// Release gives the ownership up: writes through the run handle fail with
// ErrNotOwner from now on, and this process's descriptor is closed. The
// lock is free once every descriptor sharing it (including those handed
// to children) is closed — note that a child being forked by another
// goroutine shares every descriptor until it execs, which can keep the
// lock a moment longer. The holder record is left in place: it describes
// the last holder. Releasing twice does nothing.
func (l *runLock) Release() error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	f := l.f
	l.f = nil
	if f != nil && l.released != nil {
		close(l.released)
	}
	l.mu.Unlock()
	if f == nil {
		return nil
	}
	r := l.run
	r.mu.Lock()
	if r.owner == l {
		r.owner = nil
	}
	r.mu.Unlock()
	return f.Close()
}

// readHolder reads the holder record of runDir's lock. found is false when
// there is no lock file or it is empty (never locked, or a holder is between
// taking the lock and writing its record). The record describes the last
// process that took the lock; whether it still holds it is what
// Run.Lock (authoritative) or HolderAlive (a heuristic) tell. A record
// that cannot be parsed is a *HolderRecordError saying whether a process
// holds the lock now (probeLock).
func readHolder(fsys FS, runDir string) (Holder, bool, error) {
	path := filepath.Join(runDir, lockFile)
	var problem error
	for try := 0; try < 2; try++ {
		b, err := readFile(fsys, path)
		if errors.Is(err, fs.ErrNotExist) || (err == nil && len(b) == 0) {
			return Holder{}, false, nil
		}
		if err != nil {
			return Holder{}, false, lockFileErr("read", path, err)
		}
		var h Holder
		if problem = json.Unmarshal(b, &h); problem == nil {
			return h, true, nil
		}
		held, err := probeLock(fsys, path)
		if err != nil {
			return Holder{}, false, err
		}
		if !held {
			return Holder{}, false, &HolderRecordError{Path: path, Problem: problem.Error()}
		}
		// A holder may be writing its record this moment: look once more.
		time.Sleep(20 * time.Millisecond)
	}
	return Holder{}, false, &HolderRecordError{Path: path, Problem: problem.Error(), Held: true}
}

// probeLock reports whether a process holds the run lock at path, by
// asking for a shared flock without waiting and giving it back at once.
// The lock file is opened read-only and nothing is written. Only a holder
// record that cannot be read leads here: while the probe holds its shared
// lock (microseconds), a process taking the run is refused as if the run
// were held.
func probeLock(fsys FS, path string) (bool, error) {
	f, err := fsys.OpenFile(path, os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, storageErr("open", path, err)
	}
	defer f.Close()
	switch err := f.Lock(false, false); {
	case err == nil:
		f.Unlock()
		return false, nil
	case isWouldBlock(err):
		return true, nil
	default:
		return false, storageErr("lock", path, err)
	}
}

// HolderAlive reports whether h's process is still running: same boot, a
// process with that pid exists and is not a zombie, and its start time
// matches (a reused pid does not). A holder from another host or boot is
// reported dead.
func HolderAlive(h Holder) bool {
	if h.PID <= 0 {
		return false
	}
	self := selfProcess()
	if h.BootID == "" || self.bootID == "" || h.BootID != self.bootID {
		return false
	}
	st, ok := processStartTime(h.PID)
	return ok && st == h.StartTime
}

// lockFileErr is the *StorageError of op on the run lock file at path. A
// lock that is not a regular file (a directory, a named pipe) can never be
// taken: the error says how to make it one again.
func lockFileErr(op, path string, err error) error {
	return notFileErr(op, path, err, fmt.Sprintf("the run lock must be a regular file: once no obversa process carries this run on, "+
		"remove it (rm -r %s) and the next command that takes the run makes it again", shellquote.Quote(path)))
}

// notFileErr is the *StorageError of op on path; when err says path is
// not a regular file (EISDIR, *regfile.NotRegularError), it ends with fix,
// how to make it one again.
func notFileErr(op, path string, err error, fix string) error {
	var nr *regfile.NotRegularError
	if !errors.Is(err, syscall.EISDIR) && !errors.As(err, &nr) {
		return storageErr(op, path, err)
	}
	cause := err
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Path == path {
		cause = pe.Err // the path is named once
	}
	return &StorageError{Op: op, Path: path, Err: fmt.Errorf("%w; %s", cause, fix)}
}
