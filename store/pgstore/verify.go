package pgstore

import (
	"context"
	"fmt"
	"io"
	"math"

	"github.com/obversa/obversa/store"
)

// Verify re-checks run id without changing anything, as store.Verify
// checks events.jsonl: its events are laid out as the lines the file
// backend would hold and handed to store.VerifyLines (strict envelope,
// canonical data, digest, hash chain, contiguous revs, unique ids, batch
// structure, every referenced artifact re-hashed). It adds what the
// database alone can tell: the run's head (rev and last digest, moved by
// every append) must be the stream's last event, so events removed from
// the end, which leave an intact chain, are caught; an unfinished last
// batch is a fault too, since a batch commits whole. Errors:
// store.ErrRunNotFound, and with faults an error wrapping the first
// fault's sentinel.
func (b *Backend) Verify(ctx context.Context, id string) (store.Report, error) {
	if err := store.ValidID(id); err != nil {
		return store.Report{}, fmt.Errorf("pgstore: run id: %w", err)
	}
	var headRev int64
	var headDigest string
	if err := b.pool.QueryRow(ctx, `SELECT rev, last_digest FROM runs WHERE namespace = $1 AND run_id = $2`, b.ns, id).
		Scan(&headRev, &headDigest); err != nil {
		return store.Report{}, b.rowErr(id, err)
	}
	label := b.label(id)
	pr, pw := io.Pipe()
	var last store.Event
	streamed := make(chan struct{})
	go func() {
		defer close(streamed)
		pw.CloseWithError(b.streamLines(ctx, id, pw, &last))
	}()
	rep, err := store.VerifyLines(ctx, label, pr, b.openBlob(id))
	pr.Close() // ends the writer if VerifyLines stopped early
	<-streamed
	if err != nil && rep.Events == 0 && len(rep.Faults) == 0 {
		return rep, err
	}
	if rep.TornBytes > 0 {
		rep.Faults = append(rep.Faults, store.Fault{Code: "CORRUPT_EVENT_STREAM", Rev: rep.Events + 1, Line: int(rep.Events + 1),
			Problem: "the last batch is incomplete (" + rep.TornReason + "): committed events were removed"})
		rep.TornBytes, rep.TornReason = 0, ""
	}
	switch {
	case headRev != last.Rev:
		rep.Faults = append(rep.Faults, store.Fault{Code: "CORRUPT_EVENT_STREAM", Rev: min(headRev, last.Rev) + 1, Line: int(min(headRev, last.Rev) + 1),
			Problem: fmt.Sprintf("the run's head is rev %d but its events end at rev %d: committed events are missing, or were added without moving the head", headRev, last.Rev)})
	case headDigest != last.Digest:
		rep.Faults = append(rep.Faults, store.Fault{Code: "CORRUPT_EVENT_STREAM", Rev: last.Rev, Line: int(last.Rev),
			Problem: "the run's head digest differs from its last event's digest: that event was altered"})
	}
	return rep, rep.Err(label)
}

// streamLines writes the run's events, in rev order, as events.jsonl
// lines to w, a page at a time, without checking them (VerifyLines does);
// last is set to the last event written.
func (b *Backend) streamLines(ctx context.Context, id string, w io.Writer, last *store.Event) error {
	var buf []byte
	for next := int64(1); ; {
		buf = buf[:0]
		n := 0
		err := b.page(ctx, b.pool, id, next, math.MaxInt64, func(e store.Event) {
			buf = store.AppendLine(buf, e)
			*last = e
			next = e.Rev + 1
			n++
		})
		if err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
		if _, err := w.Write(buf); err != nil {
			return err
		}
	}
}
