package pgstore

import (
	"errors"
	"fmt"
	"time"

	"github.com/obversa/obversa/store"
)

// ErrFenced marks a write refused because the writer's lease is stale: the
// run was taken over by a newer owner (a higher epoch), or the lease was
// released. The concrete error is a *FencedError, which also matches
// store.ErrNotOwner (code NOT_OWNER).
var ErrFenced = errors.New("pgstore: lease is stale (fenced)")

// ErrLeaseChanged is returned by ForceLock when the run's lease is no
// longer the one the caller confirmed gone (its epoch moved on): someone
// else took the run meanwhile, and the confirmation no longer applies.
// It matches store.ErrProcessLocked too.
var ErrLeaseChanged = errors.New("pgstore: the lease changed since it was confirmed")

// ErrLocalDirInUse is returned by CreateRun when the run's local directory
// (<LocalDir>/<namespace>/runs/<run-id>/) already holds a record of the
// file store (events.jsonl): that is the directory of a file-store run of
// the same id under the same storage directory, and this run's logs,
// stream and fold snapshot would be written into it. Nothing is created;
// another run id avoids it.
var ErrLocalDirInUse = errors.New("pgstore: the run's local directory holds a file-store run")

// LeaseInfo is a run's lease as the database holds it.
type LeaseInfo struct {
	Holder    store.Holder // the process that took the lease (Lock)
	Epoch     int64        // grows by one with every new owner; 0 before the first
	ID        string       // the lease's id (a UUID), "" before the first Lock
	Held      bool         // false once released
	ExpiresAt time.Time    // when it lapses unless renewed (database clock)
	// Expired says ExpiresAt had passed when the row was read (by the
	// database's clock, the only one all hosts share).
	Expired bool
}

// String describes the lease for messages.
func (l LeaseInfo) String() string {
	switch {
	case l.ID == "":
		return "no lease was ever taken"
	case !l.Held:
		return fmt.Sprintf("the lease of epoch %d was released (last holder pid %d on host %q)", l.Epoch, l.Holder.PID, l.Holder.Host)
	}
	state := "expires"
	if l.Expired {
		state = "expired"
	}
	return fmt.Sprintf("held by pid %d on host %q (boot %s) at epoch %d, since %s; it %s at %s",
		l.Holder.PID, l.Holder.Host, l.Holder.BootID, l.Epoch, l.Holder.StartedAt.UTC().Format(time.RFC3339),
		state, l.ExpiresAt.UTC().Format(time.RFC3339Nano))
}

// FencedError is a write refused because the writer's lease is stale. It
// matches ErrFenced and store.ErrNotOwner.
type FencedError struct {
	Run     string    // the run, as a label naming database, schema, namespace and id
	Epoch   int64     // the epoch the refused writer holds
	Current LeaseInfo // the run's lease when the write was refused
}

// Error names the run, the stale epoch and the current owner.
func (e *FencedError) Error() string {
	return fmt.Sprintf("NOT_OWNER: run %s: this process's lease (epoch %d) is stale and its write was refused: %s",
		e.Run, e.Epoch, e.Current)
}

// Is matches ErrFenced and store.ErrNotOwner.
func (e *FencedError) Is(target error) bool {
	return target == ErrFenced || target == store.ErrNotOwner
}
