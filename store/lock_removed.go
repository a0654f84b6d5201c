//go:build unix

package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// ErrRunRemoved is the cause a held run lock gives (LostCause) once the
// run's record was removed or moved while the lock was held: its
// directory was removed, moved or renamed, or its lock file unlinked or
// its events file unlinked or renamed (docs/decisions.md, "A run whose
// record is removed or moved stops"). It matches ErrRunNotFound.
var ErrRunRemoved = fmt.Errorf("%w: the run's record was removed or moved while the run was held", ErrRunNotFound)

// removedPoll is how often a held run lock whose Lost was asked for looks
// whether the run's record is still there.
const removedPoll = time.Second

// Lost returns a channel closed once the run's record is removed or
// moved while the lock is held (LostCause then says how): nothing more can be
// recorded for the run, and a watchdog stops its worker rather than let
// it write to a file no path names. From the first call until Release
// the lock looks every removedPoll: its lock file's link count (0 once
// `rm -r` took the directory) and the events file's path (gone once the
// directory is moved or renamed too).
func (l *runLock) Lost() <-chan struct{} {
	l.lostOnce.Do(func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.lost = make(chan struct{})
		if l.f != nil {
			l.released = make(chan struct{})
			go l.watchRemoved(l.released)
		}
	})
	return l.lost
}

// LostCause returns why Lost's channel was closed (an error wrapping
// ErrRunRemoved), nil while it is open.
func (l *runLock) LostCause() error {
	select {
	case <-l.lost:
		return l.cause
	default:
		return nil
	}
}

func (l *runLock) watchRemoved(released <-chan struct{}) {
	t := time.NewTicker(removedPoll)
	defer t.Stop()
	for {
		select {
		case <-released:
			return
		case <-t.C:
		}
		if err := l.removed(); err != nil {
			l.cause = err
			close(l.lost)
			return
		}
	}
}

// removed says how the run's record was removed or moved, nil while it
// is there where the run was opened
// (or the lock is released, or not on the operating system's files).
func (l *runLock) removed() error {
	l.mu.Lock()
	f := l.f
	l.mu.Unlock()
	of, ok := f.(osFile)
	if !ok {
		return nil
	}
	lock := filepath.Join(l.run.dir, lockFile)
	if fi, err := of.Stat(); err == nil {
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Nlink == 0 {
			return fmt.Errorf("%w: %s is gone (its directory was removed, or the lock file unlinked)", ErrRunRemoved, lock)
		}
	}
	events := filepath.Join(l.run.dir, eventsFile)
	if _, err := os.Lstat(events); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: %s is gone (its directory was removed, moved or renamed, or the file unlinked or renamed)", ErrRunRemoved, events)
	}
	return nil
}
