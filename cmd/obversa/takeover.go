package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/obversa/obversa/store"
	"github.com/obversa/obversa/store/pgstore"
)

// errNotConfirmed is a forced takeover the person did not confirm.
var errNotConfirmed = errors.New("the takeover was not confirmed; nothing was changed")

// forceTakeover prepares `resume --force-takeover` of a run kept in a
// database: it shows the run's lease to the person and asks whether its
// holder is gone (yes answers for them; without a terminal, yes is
// required). It returns the Lock that resume uses: a forced takeover of
// exactly the lease shown (pgstore.Run.ForceLock at its epoch, which fails
// with pgstore.ErrLeaseChanged if another process took the run
// meanwhile), or nil when the lease is not held or has expired, so that
// resume's own Lock takes it. Errors: a run directory (whose lock the
// kernel frees once its holders die: nothing to force), a refusal
// (errNotConfirmed), the database's.
func forceTakeover(ctx context.Context, ref runRef, in io.Reader, out io.Writer, yes bool) (func(context.Context, store.Record) (store.Ownership, error), error) {
	db, ok := ref.(*dbRun)
	if !ok {
		return nil, usageErr(errors.New("--force-takeover takes over a lease, which only a run kept in a database has; a run directory's lock is free once its watchdog and worker are gone, and `obversa resume` takes it then"))
	}
	rec, err := db.OpenReadOnly(ctx)
	if err != nil {
		return nil, failedErr(err)
	}
	defer rec.Close()
	l, err := rec.(*pgstore.Run).Lease(ctx)
	if err != nil {
		return nil, failedErr(err)
	}
	if !l.Held || l.Expired {
		fmt.Fprintf(out, "run %s: %s; no forced takeover is needed\n", db.id, l)
		return nil, nil
	}
	fmt.Fprintf(out, "run %s is owned by pid %d on host %q (boot %s) at epoch %d, since %s; its lease expires at %s unless renewed.\n",
		db.id, l.Holder.PID, l.Holder.Host, l.Holder.BootID, l.Epoch, l.Holder.StartedAt.Local().Format(time.RFC3339), l.ExpiresAt.Local().Format(time.RFC3339))
	fmt.Fprintf(out, "A forced takeover fences that owner: nothing it writes reaches the record from now on. It does not stop its processes:\n"+
		"plugins and commands on host %q run on until that host stops them, and what they do outside the record is not undone.\n", l.Holder.Host)
	if !yes {
		if f, ok := in.(*os.File); !ok || !isTerminal(f) {
			return nil, usageErr(fmt.Errorf("the run's lease is held by host %q until %s; nothing was asked, since stdin is not a terminal: pass --yes once you have confirmed that host is gone, or wait for the lease to expire and run `obversa resume %s`",
				l.Holder.Host, l.ExpiresAt.Local().Format(time.RFC3339), db))
		}
		fmt.Fprintf(out, "Is host %q gone (or its watchdog of this run stopped)? Take the run over? [y/N] ", l.Holder.Host)
		answer, _ := bufio.NewReader(in).ReadString('\n')
		if a := strings.ToLower(strings.TrimSpace(answer)); a != "y" && a != "yes" {
			return nil, failedErr(errNotConfirmed)
		}
	}
	epoch := l.Epoch
	return func(ctx context.Context, run store.Record) (store.Ownership, error) {
		pr, ok := run.(*pgstore.Run)
		if !ok {
			return nil, fmt.Errorf("run %s: not a PostgreSQL run handle (%T)", db.id, run)
		}
		return pr.ForceLock(ctx, epoch)
	}, nil
}

// lockedHint says what a person can do about a run another process owns:
// for a lease held by another host, wait for it to expire or force the
// takeover.
func lockedHint(ref runRef) string {
	if _, ok := ref.(*dbRun); ok {
		return fmt.Sprintf("; if the owner's host is gone, `obversa resume %s` takes the run over once its lease expires, or at once with --force-takeover", ref.Shell())
	}
	return "; `obversa approve` hands decisions to its worker, `obversa stop` stops it, and `obversa resume` carries the run on once that process has ended or paused"
}
