package watchdog

import (
	"context"
	"errors"
	"fmt"

	"github.com/obversa/obversa/store"
)

// ErrOwnershipLost is returned by Supervise (and Resume) when the run's
// ownership was lost while it was supervised: a lease that another host
// took over once it expired or by a forced takeover, or that was released
// under the watchdog. The watchdog stops its worker and this host's
// processes of the run, and records nothing more: the new owner answers
// for the run (docs/storage-postgres.md, "What a takeover promises"). It
// matches store.ErrNotOwner too (code NOT_OWNER).
var ErrOwnershipLost = errors.New("the run's ownership was lost")

// reasonLost is the exit reason of a worker stopped because the
// ownership was lost.
const reasonLost = "LOST"

// lostSignal returns the channel an ownership closes when it is lost: a
// lease (store/pgstore) has one; the file backend's lock, which the kernel
// holds until its holders die, has none (nil, never ready).
func lostSignal(o any) <-chan struct{} {
	if l, ok := o.(interface{ Lost() <-chan struct{} }); ok {
		return l.Lost()
	}
	return nil
}

// isLost reports whether the supervisor's ownership is lost.
func (s *supervisor) isLost() bool {
	select {
	case <-s.lost:
		return true
	default:
		return false
	}
}

// fence fences the worker that just ended from the run's record, where
// the ownership can (a lease: pgstore's Fence): a killed worker's
// database session may still commit what it sent, so its lease moves to a
// new epoch — waiting out a transaction that holds the run — before the
// watchdog reads what the worker wrote. A fence refused because the run
// was taken over is ErrOwnershipLost. The file backend's lock needs none:
// a dead process writes nothing more.
func (s *supervisor) fence(ctx context.Context) error {
	f, ok := s.owner.(interface{ Fence(context.Context) error })
	if !ok {
		return nil
	}
	if err := f.Fence(ctx); err != nil {
		if errors.Is(err, store.ErrNotOwner) {
			return s.lostOwnership(ctx, err)
		}
		return err
	}
	return nil
}

// lostOwnership ends supervision after the ownership was lost: the worker
// is gone (runWorker stopped it); every process of the run on this host is
// stopped without recording it, since the record takes no more writes from
// this process. The error names the new owner when it can be read, and
// the refused write (cause) when one found the loss; a run whose record
// was removed or moved (the ownership's LostCause) says that instead.
func (s *supervisor) lostOwnership(ctx context.Context, cause error) error {
	found, left := stopRun(ctx, s.marker, s.plan.TeardownGrace())
	if c, ok := s.owner.(interface{ LostCause() error }); ok && c.LostCause() != nil {
		// The record was removed or moved under the run: nobody took
		// it over.
		err := fmt.Errorf("%w; this watchdog stopped its worker and %d processes of the run (%d survived), and nothing more could be recorded: the run's record is no longer where it was, start it again with obversa run",
			c.LostCause(), len(found), len(left))
		s.o.Logger.Error("run removed", "run", s.ref.String(), "detail", err)
		return err
	}
	now := "another process took it over"
	if o, err := s.ref.Owner(ctx, s.run); err == nil && o.Found {
		now = fmt.Sprintf("it is now held by pid %d on host %q", o.Holder.PID, o.Holder.Host)
		if o.Detail != "" {
			now += " (" + o.Detail + ")"
		}
	}
	msg := fmt.Sprintf("%v: %s; this watchdog stopped its worker and %d processes of the run on this host (%d survived) and recorded nothing more",
		s.ref, now, len(found), len(left))
	if cause != nil {
		msg += " (its write was refused: " + cause.Error() + ")"
	}
	s.o.Logger.Error("ownership lost", "run", s.ref.String(), "detail", msg)
	return &lostError{msg: msg}
}

// lostError is ErrOwnershipLost with what happened.
type lostError struct{ msg string }

func (e *lostError) Error() string {
	return "NOT_OWNER: " + ErrOwnershipLost.Error() + ": run " + e.msg
}

// Is matches ErrOwnershipLost and store.ErrNotOwner.
func (e *lostError) Is(target error) bool {
	return target == ErrOwnershipLost || target == store.ErrNotOwner
}
