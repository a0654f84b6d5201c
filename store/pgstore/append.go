package pgstore

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/obversa/obversa/store"
)

// Append writes events as one batch after expectedRev (the revision the
// caller's decision was read from) and returns the batch's last revision once PostgreSQL has committed it
// (synchronous_commit as the server sets it; on by default, so the commit
// is durable). One transaction per batch: the run's row is locked (SELECT
// … FOR UPDATE), the lease this handle holds is checked against it
// (epoch, lease id, held), then the revision, then the batch's ids; the
// events go in with the run's new head and a NOTIFY for followers, and the
// transaction commits — all of it or nothing.
//
// Errors, in the order checked: store.ErrNotOwner (no lease through this
// handle; a *FencedError when the lease is stale: the run was taken over
// or the lease released), store.ErrInvalidEvent, store.ErrKnownSecret,
// store.ErrStorageLimitExceeded, then a *store.ConflictError
// (store.ErrRevisionConflict) carrying the current revision, then
// store.ErrInvalidEvent for an id already in the stream. A repeated batch
// is not taken for a retry: there is one writer, which learns the outcome
// of an append it could not see end by reading the record. If the
// connection fails while the commit is under way, the outcome is unknown
// and the error says so: the batch is in the record whole or not at all.
func (r *Run) Append(ctx context.Context, expectedRev int64, events ...store.NewEvent) (int64, error) {
	own, err := r.owner()
	if err != nil {
		return 0, err
	}
	if expectedRev < 0 {
		return 0, fmt.Errorf("%w: expectedRev %d is negative: every append is conditional on the revision its decision was read from", store.ErrInvalidEvent, expectedRev)
	}
	batch, err := r.sealer.Prepare(events)
	if err != nil {
		return 0, err
	}
	conn, err := r.b.pool.Acquire(ctx)
	if err != nil {
		return 0, dbErr("append to", r.label, err)
	}
	defer conn.Release()
	a := appender{r: r, own: own, conn: conn.Conn(), batch: batch, exp: expectedRev}
	rev, err := a.run(ctx)
	if a.open {
		// Rolled back on any path that did not commit; a connection that
		// cannot say so is closed rather than returned to the pool.
		if _, rerr := a.conn.Exec(context.WithoutCancel(ctx), "ROLLBACK"); rerr != nil {
			a.conn.Close(context.Background())
		}
	}
	if err == nil {
		r.seen(rev)
	}
	return rev, err
}

// appender is one Append's transaction.
type appender struct {
	r     *Run
	own   *Lease
	conn  *pgx.Conn
	batch []store.PreparedEvent
	exp   int64 // the caller's expectedRev
	epoch int64 // the lease's epoch, as checked in the transaction
	open  bool  // a transaction is open on conn
}

// head is the run's row as the append transaction locked it.
type head struct {
	rev    int64
	digest string
	lease  LeaseInfo
}

func (a *appender) run(ctx context.Context) (int64, error) {
	r := a.r
	ids := make([]string, len(a.batch))
	for i, e := range a.batch {
		ids[i] = e.ID
	}
	// One round trip: begin, lock the run's row, find which of the
	// batch's ids the stream already holds.
	var h head
	used := map[string]int64{}
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	b.Queue(`SELECT rev, last_digest, `+leaseCols+` FROM runs WHERE namespace = $1 AND run_id = $2 FOR UPDATE`, r.b.ns, r.id).
		QueryRow(func(row pgx.Row) error {
			return scanHead(row, &h)
		})
	b.Queue(`SELECT id, rev FROM events WHERE namespace = $1 AND run_id = $2 AND id = ANY($3)`, r.b.ns, r.id, ids).
		Query(func(rows pgx.Rows) error {
			for rows.Next() {
				var id string
				var rev int64
				if err := rows.Scan(&id, &rev); err != nil {
					return err
				}
				used[id] = rev
			}
			return rows.Err()
		})
	a.open = true
	if err := a.conn.SendBatch(ctx, b).Close(); err != nil {
		return 0, dbErr("append to", r.label, err)
	}
	r.seen(h.rev)
	epoch, err := a.own.check(h.lease)
	if err != nil {
		return 0, err
	}
	a.epoch = epoch
	if a.exp != h.rev {
		return 0, &store.ConflictError{Expected: a.exp, Current: h.rev}
	}
	for i, e := range a.batch {
		if rev, ok := used[e.ID]; ok {
			return 0, fmt.Errorf("%w: event %d of %d (type %q): its id is already used by rev %d", store.ErrInvalidEvent, i+1, len(a.batch), e.Type, rev)
		}
	}
	evs, err := r.sealer.Seal(h.rev, h.digest, time.Now(), a.batch)
	if err != nil {
		return 0, err
	}
	return a.commit(ctx, evs)
}

// commit inserts the sealed events, moves the run's head, notifies
// followers and commits, in one round trip.
func (a *appender) commit(ctx context.Context, evs []store.Event) (int64, error) {
	r := a.r
	n := len(evs)
	revs, ends, epochs := make([]int64, n), make([]int64, n), make([]int64, n)
	ids, types, datas, prevs, digests := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	tss := make([]time.Time, n)
	for i, e := range evs {
		revs[i], ends[i], epochs[i] = e.Rev, e.BatchEnd, a.epoch
		ids[i], types[i], datas[i], prevs[i], digests[i] = e.ID, e.Type, string(e.Data), e.Prev, e.Digest
		tss[i] = e.TS
	}
	last := evs[n-1]
	b := &pgx.Batch{}
	b.Queue(`INSERT INTO events (namespace, run_id, rev, id, type, ts, data, prev, digest, batch_end, epoch)
		SELECT $1, $2, * FROM unnest($3::bigint[], $4::text[], $5::text[], $6::timestamptz[], $7::text[], $8::text[], $9::text[], $10::bigint[], $11::bigint[])`,
		r.b.ns, r.id, revs, ids, types, tss, datas, prevs, digests, ends, epochs)
	b.Queue(`UPDATE runs SET rev = $3, last_digest = $4 WHERE namespace = $1 AND run_id = $2`, r.b.ns, r.id, last.Rev, last.Digest)
	b.Queue(`SELECT pg_notify($1, $2)`, notifyChannel, r.b.notifyPayload(r.id))
	b.Queue("COMMIT")
	err := a.conn.SendBatch(ctx, b).Close()
	if err == nil {
		a.open = false
		return last.Rev, nil
	}
	if a.conn.IsClosed() || ctx.Err() != nil {
		a.open = false
		// The record answers the outcome once it can be read: a storage
		// fault when the database is what failed.
		return 0, dbErr("append to", r.label, fmt.Errorf("the connection failed while the batch was being committed, outcome unknown (read the record to learn it: the batch is there whole or not at all): %w", err))
	}
	return 0, dbErr("append to", r.label, err)
}
