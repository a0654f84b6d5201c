package store

import (
	"context"
	"fmt"
)

// Rev returns the last committed revision (0 for an empty stream), after
// picking up batches appended through other handles or processes.
func (r *Run) Rev() int64 { return r.events.Rev() }

// Append appends events as one batch after expectedRev and returns the
// revision of its last event. The batch is all-or-nothing: it is written
// with one write(2) and made durable with fdatasync(2) before Append
// returns, and recovery never shows part of it.
//
// expectedRev must be the stream's last revision (0 for an empty stream):
// a stale expectedRev returns a *ConflictError (ErrRevisionConflict)
// carrying the current revision, and nothing is written.
//
// Other errors: ErrNotOwner (the handle holds no ownership; checked before
// anything else), ErrReadOnly, ErrInvalidEvent (negative expectedRev,
// empty batch, bad id or type, data that is not JSON or not exactly
// canonicalisable, an id already in the stream or twice in the batch),
// ErrKnownSecret, ErrStorageLimitExceeded (*LimitError),
// ErrCorruptEventStream (the file was damaged under us), a *StorageError
// (the write failed and was undone: nothing of the batch is on disk and
// the handle stays usable; it matches ErrStorageFull when the device was
// full), ErrStoreFailed (fdatasync, or undoing a failed write, failed: the
// outcome is unknown and the handle is poisoned), ErrClosed. If ctx ends
// while the batch waits for the stream, Append returns ctx.Err() and
// nothing is written; once the write has begun it runs to its end.
func (r *Run) Append(ctx context.Context, expectedRev int64, events ...NewEvent) (int64, error) {
	if err := r.owned(); err != nil {
		return 0, err
	}
	return r.events.Append(ctx, expectedRev, events...)
}

// Read calls fn for each committed event from fromRev (values below 1 mean
// 1) to the stream's current end, in order, after picking up batches other
// handles or processes appended. Only complete batches are read, streamed:
// memory does not grow with the stream. Each line's digest and chain link
// are checked again as it is read; damage found returns a *CorruptError.
// An error from fn stops the iteration and is returned as is.
func (r *Run) Read(ctx context.Context, fromRev int64, fn func(Event) error) error {
	return r.events.Read(ctx, fromRev, fn)
}

// Follow is Read followed by waiting for new events and passing them to fn
// as they are committed — through this handle (at once) or by other
// handles and processes (noticed within 50 ms). It returns when ctx is
// done (ctx.Err()), when fn returns an error (that error), on a read
// failure, with ErrClosed when the handle is closed, or with
// ErrRunNotFound (Present's) when, while it waits, the run's
// events.jsonl is removed or replaced (checked about once a second):
// nothing will be appended to the file it reads any more.
func (r *Run) Follow(ctx context.Context, fromRev int64, fn func(Event) error) error {
	return r.events.Follow(ctx, fromRev, fn)
}

// Present returns nil while the run directory still holds the
// events.jsonl this handle has open, and an error wrapping ErrRunNotFound,
// naming the directory, once it does not: the file or the directory was
// removed, or replaced by another (on the operating system's file system,
// where open files can be compared). Other errors are a *StorageError.
// A follower of a run (status --watch) asks it to stop when the run is
// gone instead of showing its last state without end.
func (r *Run) Present(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return r.events.present()
}

// Holder returns the holder recorded in the run's lock file: the last
// process that took the run's ownership. found is false when the run was
// never locked. A record that cannot be parsed returns found false and a
// *HolderRecordError, whose Held says whether a process holds the lock
// (when none does, the record is stale and the run has no owner).
func (r *Run) Holder(ctx context.Context) (Holder, bool, error) {
	if err := ctx.Err(); err != nil {
		return Holder{}, false, err
	}
	return readHolder(r.fsys, r.dir)
}

// owned returns nil when writes through r are allowed: the handle is open,
// writable and holds ownership.
func (r *Run) owned() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.closed:
		return ErrClosed
	case r.events.ro:
		return fmt.Errorf("%w: %s", ErrReadOnly, r.dir)
	case r.owner == nil:
		return fmt.Errorf("%w: run %s: this handle holds no ownership of the run (take it with Lock, or Adopt what a parent handed over)", ErrNotOwner, r.dir)
	}
	return nil
}
