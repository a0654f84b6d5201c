package store

import (
	"context"
	"os"
)

// Backend is one namespace of a durable record of runs: the contract every
// storage backend meets (the file backend of this package, and a database
// backend beside it), checked by one shared conformance suite. A Backend is
// safe for concurrent use.
//
// The record's semantics, whatever the backend:
//   - a run's events form one hash-chained stream (rev 1-based and
//     contiguous, prev/digest as in doc.go), so Verify checks any backend
//     the same way;
//   - Append is conditional on the revision the caller's decision was read
//     from, all-or-nothing, and durable before it returns;
//   - exactly one owner appends at a time: appends go through a Record
//     that holds ownership (Lock, or Adopt in a child the owner started);
//     an append without it fails with ErrNotOwner, and a stale owner (its
//     ownership lost or taken over) can never append again;
//   - artifacts are content-addressed and re-hashed on read;
//   - Policy limits and known secrets are enforced on every write.
type Backend interface {
	// Namespace returns the namespace this backend serves.
	Namespace() string
	// CreateRun creates an empty run and returns it open for writing.
	// Errors: ErrInvalidID, ErrInvalidPolicy, ErrRunExists, I/O errors.
	CreateRun(ctx context.Context, id string, p Policy) (Record, error)
	// OpenRun opens an existing run for writing, recovering a torn last
	// batch. Errors: ErrInvalidID, ErrRunNotFound, ErrCorruptEventStream.
	OpenRun(ctx context.Context, id string, p Policy) (Record, error)
	// OpenRunReadOnly opens an existing run for reading only: it changes
	// nothing (no recovery, no cache), and its writes fail.
	OpenRunReadOnly(ctx context.Context, id string) (Record, error)
	// ListRuns returns the ids of the namespace's runs, sorted.
	ListRuns(ctx context.Context) ([]string, error)
	// Verify re-checks a run's whole record and every referenced artifact
	// without changing anything, reporting every fault it finds. It is a
	// Backend method, not a Record one, because a damaged record cannot be
	// opened (an open validates it) and yet must be reported on. A report
	// with faults also returns an error wrapping the first fault's
	// sentinel; ErrRunNotFound for a missing run.
	Verify(ctx context.Context, id string) (Report, error)
	// Close releases what the backend holds (connections); open Records
	// stay usable until closed.
	Close() error
}

// Record is one open run: its event stream, its artifacts and its
// ownership. It is safe for concurrent use, but appends are meant to come
// from one owner (see Backend).
type Record interface {
	// ID returns the run id.
	ID() string
	// Dir returns the local directory kept beside the record for files
	// that are not part of it (worker and plugin logs, the live output
	// stream, workspace snapshots). For the file backend it is the run
	// directory itself.
	Dir() string
	// Rev returns the last committed revision this handle knows of (0 for
	// an empty stream).
	Rev() int64
	// Append writes events as one batch after expectedRev and returns the
	// batch's last revision once it is durable. A stale expectedRev fails
	// with a *ConflictError (ErrRevisionConflict); a handle without
	// ownership fails with ErrNotOwner; a read-only handle fails with
	// ErrReadOnly.
	Append(ctx context.Context, expectedRev int64, events ...NewEvent) (int64, error)
	// Read calls fn for each committed event from fromRev (1-based) to the
	// current end, in order, checking each event's digest and chain link.
	Read(ctx context.Context, fromRev int64, fn func(Event) error) error
	// Follow is Read that keeps waiting for new events until ctx ends or
	// fn returns an error. A backend whose store can be unreachable for a
	// while (a database) waits it out, telling ctx's FollowNotice.
	Follow(ctx context.Context, fromRev int64, fn func(Event) error) error
	// PutArtifact stores data and returns its reference. Like Append it
	// needs ownership (ErrNotOwner) and a writable handle (ErrReadOnly).
	PutArtifact(ctx context.Context, data []byte, mediaType, purpose string) (ArtifactRef, error)
	// ReadArtifact returns an artifact's bytes, re-hashed against ref.
	ReadArtifact(ctx context.Context, ref ArtifactRef) ([]byte, error)
	// Lock takes ownership of the run without waiting: a *LockedError
	// (ErrProcessLocked) naming the holder when another owner has it.
	Lock(ctx context.Context) (Ownership, error)
	// Adopt takes over the ownership a parent handed to this process
	// (Ownership.Handoff), for a worker started by its watchdog. It fails
	// with ErrNotOwner when nothing (or another run's ownership) was
	// handed over, or the ownership is no longer held.
	Adopt(ctx context.Context) (Ownership, error)
	// Holder returns the last recorded owner; found is false when the run
	// was never locked.
	Holder(ctx context.Context) (h Holder, found bool, err error)
	// Close releases the handle. Ownership taken through it is not
	// released by Close.
	Close() error
}

// Ownership is a held right to append to one run (the file backend's run
// lock; a database backend's lease with a fencing epoch).
type Ownership interface {
	// Holder describes the owning process.
	Holder() Holder
	// Epoch is the fencing epoch appends carry: it grows with every new
	// owner, so a stale owner's append is refused. The file backend, whose
	// lock the kernel enforces, reports 0.
	Epoch() int64
	// Handoff returns what a child process needs to act under this
	// ownership: environment entries and files to inherit
	// (exec.Cmd.ExtraFiles, in order from fd 3). The child calls
	// Record.Adopt.
	Handoff() (env []string, files []*os.File)
	// Release gives ownership up. For the file backend the lock is free
	// once every descriptor sharing it (a child's included) is closed.
	Release() error
}
