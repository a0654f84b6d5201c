package pgstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/obversa/obversa/store"
)

// LeaseEnv names the environment variable through which an owner hands
// its lease to a child process (Lease.Handoff):
// "<schema>/<namespace>/<run>/<epoch>/<lease id>". Run.Adopt reads it and
// unsets it, so that it does not reach the child's own children.
const LeaseEnv = "OBVERSA_PG_LEASE"

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

// Lease is a held lease on a run: the pgstore Ownership. While it is held
// the run's writes through the Run that took or adopted it carry its epoch
// and lease id, and a goroutine renews it every Config.RenewEvery (each
// renewal moves its expiry to LeaseTTL after the database's clock). It is
// lost when a renewal finds it taken over or released; Lost reports that.
// Fence moves it to a new epoch, fencing the processes it was handed to.
type Lease struct {
	r       *Run
	holder  store.Holder
	adopted bool

	stop    context.Context // done once Release is called
	halt    context.CancelFunc
	renewer chan struct{} // closed when the renewing goroutine has ended
	lost    chan struct{} // closed when the lease is found stale

	mu       sync.Mutex // guards released, epoch and id; held across Fence's update
	released bool
	epoch    int64
	id       string
	lostOnce sync.Once
}

// cur returns the lease's epoch and id.
func (l *Lease) cur() (int64, string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.epoch, l.id
}

var _ store.Ownership = (*Lease)(nil)

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
		return nil, fmt.Errorf("pgstore: lock %s: %w", r.label, err)
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

// Adopt takes over the lease a parent handed to this process in LeaseEnv
// (Lease.Handoff): it must name this run, and the run's lease must still
// be that one (epoch and id) and held. The child renews it too, so the
// lease lives while either process does, as a file lock shared by a
// parent and child does. LeaseEnv is unset. Errors: store.ErrNotOwner
// (nothing handed over, another run's lease) or a *FencedError (the lease
// was taken over or released since), store.ErrClosed, store.ErrReadOnly.
func (r *Run) Adopt(ctx context.Context) (store.Ownership, error) {
	if err := r.writable(ctx); err != nil {
		return nil, err
	}
	h, err := parseHandoff(os.Getenv(LeaseEnv))
	if err != nil {
		return nil, fmt.Errorf("%w: run %s: %v", store.ErrNotOwner, r.label, err)
	}
	if h.schema != r.b.cfg.Schema || h.namespace != r.b.ns || h.run != r.id {
		return nil, fmt.Errorf("%w: run %s: the lease handed over in %s is for run %s/%s of schema %s", store.ErrNotOwner, r.label, LeaseEnv, h.namespace, h.run, h.schema)
	}
	cur, err := r.Lease(ctx)
	if err != nil {
		return nil, err
	}
	if cur.Epoch != h.epoch || cur.ID != h.id || !cur.Held {
		return nil, &FencedError{Run: r.label, Epoch: h.epoch, Current: cur}
	}
	os.Unsetenv(LeaseEnv)
	return r.hold(cur.Holder, h.epoch, h.id, true)
}

// handoff is a lease handed to a child: what LeaseEnv holds.
type handoff struct {
	schema, namespace, run string
	epoch                  int64
	id                     string // the lease id, a UUID
}

// String is the LeaseEnv value.
func (h handoff) String() string {
	return fmt.Sprintf("%s/%s/%s/%d/%s", h.schema, h.namespace, h.run, h.epoch, h.id)
}

// parseHandoff reads a LeaseEnv value. The error says what is wrong
// without repeating the value's lease id.
func parseHandoff(v string) (handoff, error) {
	if v == "" {
		return handoff{}, fmt.Errorf("no lease was handed to this process (%s is not set)", LeaseEnv)
	}
	p := strings.Split(v, "/")
	if len(p) != 5 {
		return handoff{}, fmt.Errorf("%s is not <schema>/<namespace>/<run>/<epoch>/<lease id>", LeaseEnv)
	}
	h := handoff{schema: p[0], namespace: p[1], run: p[2], id: p[4]}
	epoch, err := strconv.ParseInt(p[3], 10, 64)
	if err != nil || epoch < 1 {
		return handoff{}, fmt.Errorf("%s has no valid epoch (a positive integer)", LeaseEnv)
	}
	h.epoch = epoch
	if !schemaRE.MatchString(h.schema) || store.ValidID(h.namespace) != nil || store.ValidID(h.run) != nil {
		return handoff{}, fmt.Errorf("%s does not name a schema, namespace and run", LeaseEnv)
	}
	if _, err := uuid.Parse(h.id); err != nil {
		return handoff{}, fmt.Errorf("%s has no valid lease id (a UUID)", LeaseEnv)
	}
	return h, nil
}

// hold makes a lease the ownership writes through r go under and starts
// renewing it.
func (r *Run) hold(h store.Holder, epoch int64, id string, adopted bool) (*Lease, error) {
	if err := r.b.acquire(); err != nil {
		return nil, err
	}
	l := &Lease{r: r, holder: h, epoch: epoch, id: id, adopted: adopted,
		renewer: make(chan struct{}), lost: make(chan struct{})}
	l.stop, l.halt = context.WithCancel(context.Background())
	r.mu.Lock()
	r.own = l
	r.mu.Unlock()
	go l.renew(r.b.cfg.RenewEvery)
	return l, nil
}

// Holder describes the process that took the lease (for an adopted lease,
// the parent that took it).
func (l *Lease) Holder() store.Holder { return l.holder }

// Epoch is the lease's fencing epoch.
func (l *Lease) Epoch() int64 {
	e, _ := l.cur()
	return e
}

// Lost is closed when the lease is found stale: a renewal or a write found
// the run taken over (a higher epoch) or the lease released. Writes under
// it fail from then on; a watchdog stops its worker.
func (l *Lease) Lost() <-chan struct{} { return l.lost }

// Handoff returns LeaseEnv=<schema>/<namespace>/<run>/<epoch>/<lease id>
// and no files: put the entry in the child's environment and the child's
// Run.Adopt takes the lease over. After Release it returns nothing.
func (l *Lease) Handoff() ([]string, []*os.File) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.released {
		return nil, nil
	}
	b := l.r.b
	h := handoff{schema: b.cfg.Schema, namespace: b.ns, run: l.r.id, epoch: l.epoch, id: l.id} // l.mu is held
	return []string{LeaseEnv + "=" + h.String()}, nil
}

// releaseTimeout bounds Release's update.
const releaseTimeout = 10 * time.Second

// Release gives the lease up: writes through the run handle fail with
// store.ErrNotOwner from now on and renewal stops. A lease taken with Lock
// is marked released in the database, so that the next Lock is granted at
// once (with a new epoch, which fences everyone who shared this one,
// adopters included); an adopted lease only stops this process's share
// (its parent's lease stays held). Releasing twice, or a lost lease, does
// nothing.
func (l *Lease) Release() error {
	l.mu.Lock()
	if l.released {
		l.mu.Unlock()
		return nil
	}
	l.released = true
	epoch, id := l.epoch, l.id
	l.mu.Unlock()
	r := l.r
	r.mu.Lock()
	if r.own == l {
		r.own = nil
	}
	r.mu.Unlock()
	var err error
	select {
	case <-l.lost:
	default:
		if !l.adopted {
			ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
			_, err = r.b.pool.Exec(ctx, `UPDATE runs SET lease_held = false, lease_expires_at = now()
				WHERE namespace = $1 AND run_id = $2 AND epoch = $3 AND lease_id = $4 AND lease_held`, r.b.ns, r.id, epoch, id)
			cancel()
			if err != nil {
				err = fmt.Errorf("pgstore: release lease of %s (epoch %d): %w; it lapses at its expiry", r.label, epoch, err)
			}
		}
	}
	l.halt()
	<-l.renewer
	return err
}

// renew extends the lease every interval until it is released or found
// stale. A failed renewal (the database unreachable) is retried at the
// next tick; the lease may expire meanwhile, and then another host may
// take the run, which fences this owner.
func (l *Lease) renew(every time.Duration) {
	defer close(l.renewer)
	defer l.r.b.release()
	t := time.NewTicker(every)
	defer t.Stop()
	r := l.r
	for {
		select {
		case <-l.stop.Done():
			return
		case <-t.C:
		}
		// A slow renewal may take until the lease would lapse anyway
		// (ticks meanwhile are dropped); Release cuts it short.
		ctx, cancel := context.WithTimeout(l.stop, r.b.cfg.LeaseTTL)
		epoch, id := l.cur()
		tag, err := r.b.pool.Exec(ctx, `UPDATE runs SET lease_expires_at = now() + $5 * interval '1 millisecond'
			WHERE namespace = $1 AND run_id = $2 AND epoch = $3 AND lease_id = $4 AND lease_held`,
			r.b.ns, r.id, epoch, id, r.b.cfg.LeaseTTL.Milliseconds())
		cancel()
		// A Fence that committed meanwhile moved the lease on: not a loss.
		if e2, id2 := l.cur(); err == nil && tag.RowsAffected() == 0 && e2 == epoch && id2 == id {
			l.markLost()
			return
		}
	}
}

// check refuses a write under l unless cur (the run's lease, read in the
// write's transaction) is still l and held; it returns the epoch the write
// goes under.
func (l *Lease) check(cur LeaseInfo) (int64, error) {
	epoch, id := l.cur()
	if cur.Epoch == epoch && cur.ID == id && cur.Held {
		return epoch, nil
	}
	l.markLost()
	return 0, &FencedError{Run: l.r.label, Epoch: epoch, Current: cur}
}

// Fence moves the lease to a new epoch and lease id, held by the same
// holder, so that every process it was handed to (Handoff) is fenced: its
// writes are refused from now on — a transaction that a killed worker
// left in flight included, which, if it holds the run's row, ends (commits
// or rolls back) before Fence returns. A watchdog fences its worker once
// the worker has ended, before it reads what the worker wrote: a database
// session can outlive its client. The lease's renewals and the Run's
// writes carry the new epoch from then on. Errors: store.ErrNotOwner after
// Release or for an adopted lease (only the owner that took it fences), a
// *FencedError when the lease is no longer this one (it is then lost),
// database errors.
func (l *Lease) Fence(ctx context.Context) error {
	r := l.r
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.released || l.adopted {
		return fmt.Errorf("%w: run %s: only a held lease that this process took can be fenced", store.ErrNotOwner, r.label)
	}
	id := uuid.NewString()
	var epoch int64
	err := r.b.pool.QueryRow(ctx, `UPDATE runs SET epoch = epoch + 1, lease_id = $5, lease_expires_at = now() + $6 * interval '1 millisecond'
		WHERE namespace = $1 AND run_id = $2 AND epoch = $3 AND lease_id = $4 AND lease_held RETURNING epoch`,
		r.b.ns, r.id, l.epoch, l.id, id, r.b.cfg.LeaseTTL.Milliseconds()).Scan(&epoch)
	if errors.Is(err, pgx.ErrNoRows) {
		cur, lerr := r.Lease(ctx)
		if lerr != nil {
			return lerr
		}
		l.lostOnce.Do(func() { close(l.lost) })
		return &FencedError{Run: r.label, Epoch: l.epoch, Current: cur}
	}
	if err != nil {
		return fmt.Errorf("pgstore: fence lease of %s (epoch %d): %w", r.label, l.epoch, err)
	}
	l.epoch, l.id = epoch, id
	return nil
}

// markLost records that the lease is stale. Writes through the run stay
// under it, so that each is refused inside its transaction with a
// *FencedError naming the run's current owner — whichever of a renewal
// and a write found the loss first.
func (l *Lease) markLost() {
	l.lostOnce.Do(func() { close(l.lost) })
}
