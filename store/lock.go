package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// lockFile is the run lock's file name inside the run directory.
const lockFile = "lock"

// Holder identifies the process that took a run lock (DESIGN §6). It is
// recorded in <rundir>/lock so that a process refused the lock can name the
// holder, and so that HolderAlive can tell a live holder from a dead one
// whose pid was reused.
type Holder struct {
	PID       int       `json:"pid"`
	StartTime uint64    `json:"start_time"` // /proc/<pid>/stat field 22, clock ticks since boot
	BootID    string    `json:"boot_id"`    // /proc/sys/kernel/random/boot_id
	Host      string    `json:"host"`       // os.Hostname
	StartedAt time.Time `json:"started_at"` // when the lock was taken
}

// CurrentHolder describes the calling process, with StartedAt set to now.
// Fields the platform cannot provide are left zero.
func CurrentHolder() Holder {
	host, _ := os.Hostname()
	self := selfProcess()
	return Holder{
		PID:       os.Getpid(),
		StartTime: self.startTime,
		BootID:    self.bootID,
		Host:      host,
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

// Lock is a held run lock: flock(2) on <rundir>/lock. The lock belongs to
// the open file description, so it is held while any process keeps a
// descriptor for it — pass File to a child through exec.Cmd.ExtraFiles and
// the lock is held while either process lives; the kernel frees it when the
// last descriptor closes.
type Lock struct {
	f *os.File
}

// Lock takes the run's process lock without waiting. If another open file
// description holds it, it returns a *LockedError (ErrProcessLocked) naming
// the holder recorded in the lock file. On success it records
// CurrentHolder() in the file.
func (r *Run) Lock() (*Lock, error) {
	if err := r.usable(); err != nil {
		return nil, err
	}
	path := filepath.Join(r.dir, lockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("store: open run lock: %w", err)
	}
	if err := flock(f, lockExclusive|lockNonBlock); err != nil {
		f.Close()
		if isWouldBlock(err) {
			h, known, _ := ReadHolder(r.dir)
			return nil, &LockedError{Dir: r.dir, Holder: h, Known: known}
		}
		return nil, fmt.Errorf("store: lock %s: %w", path, err)
	}
	rec, _ := json.Marshal(CurrentHolder())
	rec = append(rec, '\n')
	if err := f.Truncate(0); err == nil {
		_, err = f.WriteAt(rec, 0)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("store: write holder record %s: %w", path, err)
	}
	return &Lock{f: f}, nil
}

// File returns the locked file, to hand to a child process
// (exec.Cmd.ExtraFiles) so that the lock outlives this process while the
// child runs.
func (l *Lock) File() *os.File { return l.f }

// Release closes this process's descriptor. The lock is free once every
// descriptor sharing it (including those handed to children) is closed —
// note that a child being forked by another goroutine shares every
// descriptor until it execs, which can keep the lock a moment longer. The
// holder record is left in place: it describes the last holder.
func (l *Lock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}

// ReadHolder reads the holder record of runDir's lock. found is false when
// there is no lock file or it is empty (never locked, or a holder is between
// taking the lock and writing its record). The record describes the last
// process that took the lock; whether it still holds it is what
// Run.Lock (authoritative) or HolderAlive (a heuristic) tell.
func ReadHolder(runDir string) (Holder, bool, error) {
	b, err := os.ReadFile(filepath.Join(runDir, lockFile))
	if errors.Is(err, fs.ErrNotExist) || (err == nil && len(b) == 0) {
		return Holder{}, false, nil
	}
	if err != nil {
		return Holder{}, false, fmt.Errorf("store: read holder record: %w", err)
	}
	var h Holder
	if err := json.Unmarshal(b, &h); err != nil {
		return Holder{}, false, fmt.Errorf("store: holder record of %s is not valid: %w", runDir, err)
	}
	return h, true, nil
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
