package pgstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/obversa/obversa/store"
)

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
				err = fmt.Errorf("%w; the lease lapses at its expiry", dbErr(fmt.Sprintf("release the lease (epoch %d) of", epoch), r.label, err))
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
		return dbErr(fmt.Sprintf("fence the lease (epoch %d) of", l.epoch), r.label, err)
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
