package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/signal"
	"strconv"
	"syscall"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/obversa/obversa/host/runstate"
	"github.com/obversa/obversa/host/watchdog"
	"github.com/obversa/obversa/store"
)

func newEventsCmd(g *globals) *cobra.Command {
	var asJSON, follow bool
	var from int64
	cmd := &cobra.Command{
		Use:   "events [--json] [--follow] [--from REV] RUN",
		Short: "Print a stored run's events",
		Long: `events prints a run's record, one event per line (--json: each envelope as
recorded), from revision --from on.

With --follow it prints each event as it is recorded and exits 0 once the run has
ended — completed, failed or stopped — after its result and what the watchdog records
after it (the cleanup). A paused run, or one no watchdog holds (interrupted), has not
ended: it can be resumed, so --follow keeps following it until it ends or you
interrupt (Ctrl-C, exit 0).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ref, err := g.findRun(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			defer ref.Close()
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			run, err := ref.OpenReadOnly(ctx)
			if err != nil {
				return failedErr(err)
			}
			defer run.Close()
			// One write per 64 KiB, not per event: a record of 100 000
			// events cost as many write calls. --follow writes each event
			// as it comes.
			w := bufio.NewWriterSize(cmd.OutOrStdout(), 64<<10)
			defer w.Flush()
			var line []byte
			print := func(e store.Event) error {
				if asJSON {
					b, err := json.Marshal(e)
					if err != nil {
						return err
					}
					_, _ = w.Write(append(b, '\n'))
					if follow {
						_ = w.Flush() // as unbuffered prints, a failed write of stdout is not the run's fault
					}
					return nil
				}
				line = eventLine(line[:0], e)
				_, _ = w.Write(line)
				if follow {
					_ = w.Flush()
				}
				return nil
			}
			if follow {
				err = followEvents(store.WithFollowNotice(ctx, unreachableNotice(cmd.ErrOrStderr(), "events")), ref, run, from, print)
				if ctx.Err() != nil {
					return nil
				}
			} else {
				err = run.Read(ctx, from, print)
			}
			if err != nil {
				return failedErr(err)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print each event's envelope as one JSON line")
	cmd.Flags().BoolVar(&follow, "follow", false, "keep printing new events until the run ends (a paused run: until interrupted)")
	atLeastVar(cmd.Flags(), &from, "from", 1, 1, "revisions count from 1", "first revision to print")
	return cmd
}

// followEvents prints the events from revision from on as they are
// recorded until the run is over (watchdog.Follow); it folds the record
// from its start to know when.
func followEvents(ctx context.Context, ref runRef, run store.Record, from int64, print func(store.Event) error) error {
	st := runstate.New()
	return watchdog.Follow(ctx, ref, run, 1, runstate.NotEnded, func(e store.Event) (runstate.Ending, error) {
		if e.Rev >= from {
			if err := print(e); err != nil {
				return 0, err
			}
		}
		if err := st.Apply(e); err != nil {
			return 0, err
		}
		return st.Ending(), nil
	})
}

// unreachableNotice is the store.FollowNotice of a follower that prints
// (events --follow, the progress lines): it says once on w, headed by who,
// that the store is unreachable and that it waits, and once that it
// answers again.
func unreachableNotice(w io.Writer, who string) store.FollowNotice {
	return func(err error) {
		if err != nil {
			fmt.Fprintln(w, termText(fmt.Sprintf("%s: the record cannot be read: %v; trying again until it answers (Ctrl-C stops)", who, err)))
			return
		}
		fmt.Fprintln(w, termText(who+": the record can be read again"))
	}
}

// eventLine appends e's line of the table form to b: its revision, time,
// type and readable text (readable, or its data cut at 120 bytes), as
// fmt's "%5d  %s  %-32s %s\n" would, without fmt: a record of 100 000
// events prints as many lines.
func eventLine(b []byte, e store.Event) []byte {
	var rev [20]byte
	digits := strconv.AppendInt(rev[:0], e.Rev, 10)
	for range 5 - len(digits) {
		b = append(b, ' ')
	}
	b = append(append(b, digits...), "  "...)
	b = e.TS.UTC().AppendFormat(b, "15:04:05.000")
	b = append(append(b, "  "...), e.Type...)
	for range 32 - utf8.RuneCountInString(e.Type) {
		b = append(b, ' ')
	}
	b = append(b, ' ')
	switch text, ok := readable(e.Type, e.Data); {
	case ok:
		b = append(b, text...)
	case len(e.Data) > compactBytes:
		b = append(append(b, e.Data[:compactBytes-1]...), "…"...)
	default:
		b = append(b, e.Data...)
	}
	return append(b, '\n')
}

// compactBytes is how much of an event's data the table form shows
// (bytes), the last of them replaced by "…" when it is longer.
const compactBytes = 120
