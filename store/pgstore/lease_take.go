package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/obversa/obversa/store"
)

// leaseCols are the runs columns scanLease reads, in its order.
const leaseCols = `epoch, coalesce(lease_id::text, ''), lease_held, coalesce(lease_expires_at, 'epoch'::timestamptz),
	coalesce(lease_expires_at <= now(), true), holder_host, holder_pid, holder_boot_id, holder_start_time,
	coalesce(holder_started_at, 'epoch'::timestamptz)`

// scanLease reads leaseCols.
func scanLease(scan func(...any) error, dst []any, l *LeaseInfo) error {
	var start int64
	err := scan(append(dst, &l.Epoch, &l.ID, &l.Held, &l.ExpiresAt, &l.Expired, &l.Holder.Host, &l.Holder.PID,
		&l.Holder.BootID, &start, &l.Holder.StartedAt)...)
	l.Holder.StartTime = uint64(start)
	l.ExpiresAt, l.Holder.StartedAt = l.ExpiresAt.UTC(), l.Holder.StartedAt.UTC()
	return err
}

// scanHead reads rev, last_digest and leaseCols.
func scanHead(row pgx.Row, h *head) error {
	return scanLease(row.Scan, []any{&h.rev, &h.digest}, &h.lease)
}

// Lock takes the run's lease without waiting. It is granted when the run
// has no held lease, when the lease has expired (by the database's clock:
// its owner stopped renewing it), or when the holder ran on this host and
// boot and its process is gone (store.HolderAlive) — a same-host restart
// need not wait out the TTL. Taking it increments the run's epoch, which
// fences every earlier owner. Otherwise it returns a *store.LockedError
// (store.ErrProcessLocked) naming the holder, with the lease's epoch and
// expiry. Errors also: store.ErrClosed, store.ErrReadOnly,
// store.ErrRunNotFound, database errors.
func (r *Run) Lock(ctx context.Context) (store.Ownership, error) {
	return r.take(ctx, -1)
}

// ForceLock takes the run's lease even though it is held and unexpired,
// for a person who has confirmed that its holder is gone (a host that
// will not come back): epoch is the epoch of the lease they confirmed
// (LeaseInfo.Epoch from Run.Lease). If the run's epoch has moved on since,
// someone else took the run meanwhile and ForceLock fails with
// ErrLeaseChanged. The old holder, if it is in fact alive, is fenced: its
// writes are refused from now on; its processes are not stopped (see the
// package documentation on what a takeover promises).
func (r *Run) ForceLock(ctx context.Context, epoch int64) (*Lease, error) {
	if epoch < 0 {
		return nil, fmt.Errorf("pgstore: force lock: epoch %d is negative", epoch)
	}
	return r.take(ctx, epoch)
}

// Lease returns the run's lease as the database holds it now.
func (r *Run) Lease(ctx context.Context) (LeaseInfo, error) {
	if err := r.usable(); err != nil {
		return LeaseInfo{}, err
	}
	var l LeaseInfo
	row := r.b.pool.QueryRow(ctx, `SELECT `+leaseCols+` FROM runs WHERE namespace = $1 AND run_id = $2`, r.b.ns, r.id)
	if err := scanLease(row.Scan, nil, &l); err != nil {
		return LeaseInfo{}, r.b.rowErr(r.id, err)
	}
	return l, nil
}

// Holder returns the process that last took the run's lease; found is
// false when the run was never locked.
func (r *Run) Holder(ctx context.Context) (store.Holder, bool, error) {
	l, err := r.Lease(ctx)
	if err != nil {
		return store.Holder{}, false, err
	}
	return l.Holder, l.ID != "", nil
}

// take is Lock (force < 0) and ForceLock (force = the confirmed epoch).
func (r *Run) take(ctx context.Context, force int64) (*Lease, error) {
	if err := r.writable(ctx); err != nil {
		return nil, err
	}
	me := store.CurrentHolder()
	me.StartedAt = me.StartedAt.Truncate(time.Microsecond) // as the database keeps it
	id := uuid.NewString()
	var epoch int64
	err := pgx.BeginFunc(ctx, r.b.pool, func(tx pgx.Tx) error {
		var cur LeaseInfo
		row := tx.QueryRow(ctx, `SELECT `+leaseCols+` FROM runs WHERE namespace = $1 AND run_id = $2 FOR UPDATE`, r.b.ns, r.id)
		if err := scanLease(row.Scan, nil, &cur); err != nil {
			return r.b.rowErr(r.id, err)
		}
		switch {
		case force >= 0 && cur.Epoch != force:
			return fmt.Errorf("%w (%w): run %s: the lease confirmed gone was epoch %d, the run is now at epoch %d: %s",
				ErrLeaseChanged, store.ErrProcessLocked, r.label, force, cur.Epoch, cur)
		case force < 0 && cur.Held && !cur.Expired && !deadHere(cur.Holder, me):
			return fmt.Errorf("%w; lease epoch %d expires at %s unless renewed",
				&store.LockedError{Dir: r.label, Holder: cur.Holder, Known: true}, cur.Epoch, cur.ExpiresAt.UTC().Format(time.RFC3339Nano))
		}
		err := tx.QueryRow(ctx, `UPDATE runs SET epoch = epoch + 1, lease_id = $3, lease_held = true,
				lease_expires_at = now() + $4 * interval '1 millisecond',
				holder_host = $5, holder_pid = $6, holder_boot_id = $7, holder_start_time = $8, holder_started_at = $9
			WHERE namespace = $1 AND run_id = $2 RETURNING epoch`,
			r.b.ns, r.id, id, r.b.cfg.LeaseTTL.Milliseconds(), me.Host, me.PID, me.BootID, int64(me.StartTime), me.StartedAt).Scan(&epoch)
		return err
	})
	if err != nil {
		if errors.Is(err, store.ErrProcessLocked) || errors.Is(err, store.ErrRunNotFound) {
			return nil, err
		}
		return nil, dbErr("lock", r.label, err)
	}
	return r.hold(me, epoch, id, false)
}

// deadHere reports whether h ran on this host and boot (by name and boot
// id) and its process is gone, so its lease can be taken without waiting
// for it to expire. Another host's holder is never judged: only its
// lease's expiry speaks for it.
func deadHere(h, me store.Holder) bool {
	return h.Host == me.Host && h.BootID != "" && h.BootID == me.BootID && !store.HolderAlive(h)
}
