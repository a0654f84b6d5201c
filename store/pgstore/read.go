package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/obversa/obversa/store"
)

// pageSize is how many events one query of a read fetches: reads stream in
// pages, so memory does not grow with the stream and no connection is held
// while the caller's function runs.
const pageSize = 1024

// followPoll is how often Follow looks for new events while the listener
// is not connected (a notification may be missed then). While it is
// connected, Follow waits for notifications alone.
const followPoll = time.Second

// querier is a pool or a connection.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// Read calls fn for each committed event from fromRev (values below 1
// mean 1) to the run's last revision when Read started, in order. Each
// event is laid out as its events.jsonl line and re-checked (store.ParseLine:
// envelope, canonical data, digest) and chained to the one before it; damage
// returns a *store.CorruptError naming the run and revision. An error from
// fn stops the iteration and is returned as is.
func (r *Run) Read(ctx context.Context, fromRev int64, fn func(store.Event) error) error {
	if err := r.usable(); err != nil {
		return err
	}
	end, err := r.head(ctx)
	if err != nil {
		return err
	}
	return r.readRange(ctx, r.b.pool, max(fromRev, 1), end, fn)
}

// head reads the run's last committed revision.
func (r *Run) head(ctx context.Context) (int64, error) {
	var rev int64
	if err := r.b.pool.QueryRow(ctx, `SELECT rev FROM runs WHERE namespace = $1 AND run_id = $2`, r.b.ns, r.id).Scan(&rev); err != nil {
		return 0, r.b.rowErr(r.id, err)
	}
	r.seen(rev)
	return rev, nil
}

// Follow is Read that then waits for events committed later and passes
// them to fn, until ctx ends (ctx.Err()) or fn or a read fails. It learns
// of commits by LISTEN/NOTIFY (every append notifies in its transaction);
// while the listening connection is down it polls every second, and when
// the connection comes back it reads again, so nothing sent meanwhile is
// missed. A read that fails because the database is unreachable
// (store.ErrUnavailable) does not end it: it tells ctx's
// store.FollowNotice once, tries again after a backoff (followPoll,
// doubling up to followBackoffMax) and goes on from the first event fn
// has not had once the database answers, telling the notice nil.
func (r *Run) Follow(ctx context.Context, fromRev int64, fn func(store.Event) error) error {
	if err := r.usable(); err != nil {
		return err
	}
	// Subscribed before the first read, so that no commit after the read
	// goes unnoticed.
	sub := r.b.lis.subscribe(r.id)
	defer r.b.lis.unsubscribe(sub)
	f := &follow{r: r, fn: fn, next: max(fromRev, 1), notice: store.FollowNoticeOf(ctx)}
	for {
		caught, err := f.catchUp(ctx)
		if err != nil {
			return err
		}
		if caught {
			continue
		}
		var poll <-chan time.Time
		var t *time.Timer
		if wait := f.wait(); wait > 0 || !r.b.lis.connected() {
			t = time.NewTimer(max(wait, followPoll))
			poll = t.C
		}
		select {
		case <-ctx.Done():
		case <-sub.wake:
		case <-poll:
		}
		if t != nil {
			t.Stop()
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

// followBackoffMax bounds the wait between two reads of a Follow while the
// database is unreachable.
const followBackoffMax = 10 * time.Second

// follow is one Follow call in progress.
type follow struct {
	r      *Run
	fn     func(store.Event) error
	next   int64 // the first revision fn has not had
	notice store.FollowNotice
	down   time.Duration // the backoff while the database is unreachable, 0 when it answers
	fnErr  error
}

// catchUp passes fn what was committed from f.next on. caught is set when
// it passed some (look again at once); an unreachable database is told and
// waited out (f.wait), any other error is returned.
func (f *follow) catchUp(ctx context.Context) (caught bool, err error) {
	end, err := f.r.head(ctx)
	if err == nil && end >= f.next {
		err = f.r.readRange(ctx, f.r.b.pool, f.next, end, f.deliver)
		caught = err == nil
	}
	switch {
	case err == nil:
		if f.down > 0 {
			f.down = 0
			f.notice(nil)
		}
		return caught, nil
	case f.fnErr != nil || ctx.Err() != nil || !errors.Is(err, store.ErrUnavailable):
		return false, err
	case f.down == 0:
		f.notice(err)
		f.down = followPoll
	default:
		f.down = min(2*f.down, followBackoffMax)
	}
	return false, nil
}

// deliver passes e to fn and moves past it.
func (f *follow) deliver(e store.Event) error {
	if err := f.fn(e); err != nil {
		f.fnErr = err
		return err
	}
	f.next = e.Rev + 1
	return nil
}

// wait is how long to wait before the next read: the backoff while the
// database is unreachable, else 0 (until a notification).
func (f *follow) wait() time.Duration { return f.down }

// readRange calls fn for the committed events from..to, in order, in
// pages. It re-checks each event's line and its link to the event before
// (reading from-1 too, when there is one, to check the first link).
func (r *Run) readRange(ctx context.Context, q querier, from, to int64, fn func(store.Event) error) error {
	start := max(from-1, 1)
	next := start
	var prev string
	var line []byte
	page := make([]store.Event, 0, min(pageSize, max(to-next+1, 0)))
	for next <= to {
		page = page[:0]
		err := r.b.page(ctx, q, r.id, next, to, func(e store.Event) { page = append(page, e) })
		if err != nil {
			return dbErr("read", r.label, err)
		}
		if len(page) == 0 {
			return r.corrupt(next, "committed event is missing (rows were deleted)")
		}
		for _, e := range page {
			if e.Rev != next {
				return r.corrupt(next, "committed event is missing (rows were deleted)")
			}
			line = store.AppendLine(line[:0], e)
			ev, err := store.ParseLine(line)
			if err != nil {
				return r.corrupt(next, err.(*store.CorruptError).Problem)
			}
			switch {
			case ev.Rev == 1 && ev.Prev != "":
				return r.corrupt(next, `rev 1 must have prev ""`)
			case ev.Rev > 1 && ev.Rev > start && ev.Prev != prev:
				return r.corrupt(next, fmt.Sprintf("prev does not match the digest of rev %d (that event or this one was altered, or events were removed or reordered)", ev.Rev-1))
			}
			prev = ev.Digest
			next++
			if ev.Rev >= from {
				if err := fn(ev); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// corrupt reports damage at rev of the run's stream.
func (r *Run) corrupt(rev int64, problem string) error {
	return &store.CorruptError{Path: r.label, Line: int(rev), Rev: rev, Problem: problem}
}

// page calls fn for each stored event of run id from rev from to rev to
// (at most pageSize of them), in rev order, as the table holds them (no
// check).
func (b *Backend) page(ctx context.Context, q querier, id string, from, to int64, fn func(store.Event)) error {
	rows, err := q.Query(ctx, `SELECT rev, id, type, ts, data, prev, digest, batch_end FROM events
		WHERE namespace = $1 AND run_id = $2 AND rev >= $3 AND rev <= $4 ORDER BY rev LIMIT $5`,
		b.ns, id, from, to, pageSize)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var e store.Event
		var data string
		if err := rows.Scan(&e.Rev, &e.ID, &e.Type, &e.TS, &data, &e.Prev, &e.Digest, &e.BatchEnd); err != nil {
			return err
		}
		e.Data = []byte(data)
		fn(e)
	}
	return rows.Err()
}
