package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/obversa/obversa/host/watchdog"
	"github.com/obversa/obversa/store"
)

// holderWait bounds how long a refused command waits for the process
// that holds the run to record who it is: the lock is taken before the
// holder record is written, so a command that lost a race by a hair may
// read no record, or the previous holder's.
const holderWait = time.Second

// lockedRefusal is the refusal of a command that found the run held by
// another process (err matches store.ErrProcessLocked): exit 2, since
// nothing was done (docs/decisions.md, "A held run is a refusal"), with
// the holder named — pid, host, since when and, on this host, its
// command line — and what to do: look at it with `obversa status`, and
// hint.
func lockedRefusal(ctx context.Context, ref runRef, err error, hint string) error {
	return lockedRefusalDone(ctx, ref, err, "nothing was done", "run the command again", hint)
}

// lockedRefusalDone is lockedRefusal for a command that did part of its
// work before it found the run held: done says what it did, as the record
// shows it ("nothing was done" for none). A holder still alive is named
// as holding the run, with hint. When none is recorded alive within
// holderWait the refusal says so, names the last recorded holder as ended
// and says what to do now (again: "run the command again" when it did
// nothing), without hint (which speaks of the holder): a command that took the run only to check it (a resume refused
// for its position) lets it go at once, having carried nothing on.
func lockedRefusalDone(ctx context.Context, ref runRef, err error, done, again, hint string) error {
	o, ok := liveHolder(ctx, ref)
	var le *store.LockedError
	if !ok && !(errors.As(err, &le) && le.Unreadable != "") {
		return usageErr(&unheldError{err: err, msg: unheldText(ref, le, done, again)})
	}
	if !ok {
		return usageErr(fmt.Errorf("%w; %s. Another process holds the run: see what it is doing with `obversa status %s`%s", err, done, ref.Shell(), hint))
	}
	held := &store.LockedError{Dir: ref.String(), Holder: o.Holder, Known: true}
	what := ""
	if o.Here {
		if c := commandOf(o.Holder.PID); c != "" {
			what = fmt.Sprintf(" (`%s`)", c)
		}
	}
	return usageErr(fmt.Errorf("%w%s; %s. Another process holds the run: see what it is doing with `obversa status %s`%s", held, what, done, ref.Shell(), hint))
}

// unheldText is the refusal of a command that found the run's lock taken
// when no live process is recorded as holding it: that the lock was
// taken, the last recorded holder (from le, when one was read) as ended,
// done and again.
func unheldText(ref runRef, le *store.LockedError, done, again string) string {
	last := ""
	if le != nil && le.Known {
		last = fmt.Sprintf(" (the last recorded holder, pid %d on host %q, has ended)", le.Holder.PID, le.Holder.Host)
	}
	return fmt.Sprintf("PROCESS_LOCKED: run %s was locked by another process, but no live process is recorded as holding it now: the one that locked it has ended, or took the run only to check it and let it go%s; %s. Now %s; `obversa status %s` shows where the run stands",
		ref, last, done, again, ref.Shell())
}

// unheldError is the refusal unheldText words: its text replaces err's,
// which names the holder recorded when the lock was found taken, and it
// unwraps to err, so it still matches store.ErrProcessLocked.
type unheldError struct {
	err error
	msg string
}

// Error is the refusal's text.
func (e *unheldError) Error() string { return e.msg }

// Unwrap returns the lock's error.
func (e *unheldError) Unwrap() error { return e.err }

// liveHolder returns the run's owner once a live one is recorded, waiting
// up to holderWait; false when none is (the holder died meanwhile, or its
// record cannot be read).
func liveHolder(ctx context.Context, ref runRef) (watchdog.Owner, bool) {
	run, err := ref.OpenReadOnly(ctx)
	if err != nil {
		return watchdog.Owner{}, false
	}
	defer run.Close()
	deadline := time.Now().Add(holderWait)
	for {
		o, err := ref.Owner(ctx, run)
		switch {
		case err == nil && o.Found && o.Live:
			return o, true
		case err != nil || time.Now().After(deadline):
			return watchdog.Owner{}, false
		}
		select {
		case <-ctx.Done():
			return watchdog.Owner{}, false
		case <-time.After(20 * time.Millisecond):
		}
	}
}
