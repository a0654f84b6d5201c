package store

import (
	"context"
	"fmt"
)

// Rev returns the last committed revision (0 for an empty stream), after
// picking up batches appended through other handles or processes.
func (r *Run) Rev() int64 { return r.events.Rev() }

// Append appends events as one batch after expectedRev; see Stream.Append
// for the guarantees and errors. It fails with ErrNotOwner unless this
// handle holds the run's ownership (Lock or Adopt), checked before the
// batch is prepared.
func (r *Run) Append(ctx context.Context, expectedRev int64, events ...NewEvent) (int64, error) {
	if err := r.owned(); err != nil {
		return 0, err
	}
	return r.events.Append(ctx, expectedRev, events...)
}

// Read calls fn for each committed event from fromRev; see Stream.Read.
func (r *Run) Read(ctx context.Context, fromRev int64, fn func(Event) error) error {
	return r.events.Read(ctx, fromRev, fn)
}

// Follow is Read that then waits for new events; see Stream.Follow.
func (r *Run) Follow(ctx context.Context, fromRev int64, fn func(Event) error) error {
	return r.events.Follow(ctx, fromRev, fn)
}

// Holder returns the holder recorded in the run's lock file: the last
// process that took the run's ownership. found is false when the run was
// never locked.
func (r *Run) Holder(ctx context.Context) (Holder, bool, error) {
	if err := ctx.Err(); err != nil {
		return Holder{}, false, err
	}
	return readHolder(r.dir)
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
