package executor

import (
	"context"
	"errors"

	"github.com/obversa/obversa/host/runstate"
	"github.com/obversa/obversa/internal/failpoint"
)

// maxGroup bounds how many attempt messages share one append.
const maxGroup = 256

// handleGroup appends what attempts handed over with one write (a settle
// also takes the next dispatch decision into it) and acknowledges each.
// When the record's policy refuses the write, nothing was written: the
// state is refolded and, for several messages, each is taken alone so only
// the offending one is refused; a refused settle is recorded as the node's
// failure, a refused intermediate record goes back to its attempt.
func (x *Executor) handleGroup(ctx context.Context, msgs []message) ([]start, error) {
	var b batch
	var settled []string
	for _, m := range msgs {
		for _, e := range m.events {
			if err := x.addEvent(&b, e); err != nil {
				return nil, err
			}
		}
		if m.settle {
			x.active--
			settled = append(settled, m.node)
		}
	}
	var starts []start
	if len(settled) > 0 {
		var err error
		if starts, err = x.decide(&b); err != nil {
			return nil, err
		}
	}
	err := x.commit(ctx, b)
	if refusedByRecord(err) {
		if rerr := x.refold(ctx); rerr != nil {
			return nil, rerr
		}
		switch {
		case len(msgs) > 1:
			x.active += len(settled)
			var all []start
			for _, m := range msgs {
				res, err := x.handleGroup(ctx, []message{m})
				if err != nil && !errors.Is(err, errRefused) {
					return nil, err
				}
				all = append(all, res...)
			}
			return all, nil
		case msgs[0].settle:
			starts, err = x.refuseResult(ctx, msgs[0], err)
		default:
			err = &refusedError{err: err}
		}
	}
	for _, m := range msgs {
		ack(m, err)
	}
	if err != nil {
		return nil, err
	}
	if failpoint.Enabled {
		for _, node := range settled {
			failpoint.Hit(ctx, failpoint.AfterResult, node)
		}
	}
	return starts, nil
}

func ack(m message, err error) {
	if m.ack != nil {
		m.ack <- err
	}
}

// refold rebuilds the state from the record after a refused append: what
// was folded for the refused batch is dropped.
func (x *Executor) refold(ctx context.Context) error {
	fresh, err := runstate.Load(ctx, x.o.Run)
	if err != nil {
		return err
	}
	x.rs, x.rev = fresh, fresh.Rev()
	return nil
}

// gather returns m with whatever else attempts have settled meanwhile, up
// to maxGroup messages or what one append may hold (groupFill): they share
// one append, one fdatasync for every result that is ready
// (docs/architecture.md#performance-budget).
func (x *Executor) gather(m message) []message {
	msgs := []message{m}
	group := x.groupFill(m)
	for len(msgs) < maxGroup && !group.full() {
		select {
		case m := <-x.msgs:
			msgs = append(msgs, m)
			group.add(m)
		default:
			return msgs
		}
	}
	return msgs
}
