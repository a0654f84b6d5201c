package pgstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/obversa/obversa/store"
)

// Run is one open run in PostgreSQL: a store.Record. Safe for concurrent
// use; appends come from the handle holding the run's lease.
type Run struct {
	b      *Backend
	id     string
	dir    string
	label  string
	sealer *store.Sealer
	ro     bool

	rev atomic.Int64 // last committed rev this handle saw

	mu     sync.Mutex
	closed bool
	own    *Lease // the lease writes go under; nil without one
}

var _ store.Record = (*Run)(nil)

// ID returns the run id.
func (r *Run) ID() string { return r.id }

// Dir returns the local directory kept beside the record:
// <LocalDir>/<namespace>/runs/<run-id>/ (created by a writable open).
func (r *Run) Dir() string { return r.dir }

// revTimeout bounds the look-up Rev makes.
const revTimeout = 5 * time.Second

// Rev returns the run's last committed revision, read from the database;
// if that read fails, the last revision this handle saw.
func (r *Run) Rev() int64 {
	if r.usable() != nil {
		return r.rev.Load()
	}
	ctx, cancel := context.WithTimeout(context.Background(), revTimeout)
	defer cancel()
	var rev int64
	if err := r.b.pool.QueryRow(ctx, `SELECT rev FROM runs WHERE namespace = $1 AND run_id = $2`, r.b.ns, r.id).Scan(&rev); err == nil {
		r.seen(rev)
	}
	return r.rev.Load()
}

// seen records that the stream reached rev.
func (r *Run) seen(rev int64) {
	for {
		old := r.rev.Load()
		if rev <= old || r.rev.CompareAndSwap(old, rev) {
			return
		}
	}
}

// Close releases the handle. A lease taken through it stays held (and
// renewed) until released.
func (r *Run) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	r.mu.Unlock()
	r.b.release()
	return nil
}

func (r *Run) usable() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return store.ErrClosed
	}
	return nil
}

// writable checks that r may take ownership.
func (r *Run) writable(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := r.usable(); err != nil {
		return err
	}
	if r.ro {
		return fmt.Errorf("%w: %s", store.ErrReadOnly, r.label)
	}
	return nil
}

// owner returns the lease writes through r go under: store.ErrClosed,
// store.ErrReadOnly, or store.ErrNotOwner when there is none.
func (r *Run) owner() (*Lease, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.closed:
		return nil, store.ErrClosed
	case r.ro:
		return nil, fmt.Errorf("%w: %s", store.ErrReadOnly, r.label)
	case r.own == nil:
		return nil, fmt.Errorf("%w: run %s: this handle holds no lease on the run (take it with Lock, or Adopt what a parent handed over)", store.ErrNotOwner, r.label)
	}
	return r.own, nil
}

// rowErr turns a failed look-up of the run's row into an error.
func (b *Backend) rowErr(id string, err error) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("%w: %s", store.ErrRunNotFound, b.label(id))
	}
	return dbErr("read", b.label(id), err)
}
