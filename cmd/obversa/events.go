package main

import (
	"encoding/json"
	"fmt"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/obversa/obversa/store"
)

func newEventsCmd(g *globals) *cobra.Command {
	var asJSON, follow bool
	var from int64
	cmd := &cobra.Command{
		Use:   "events [--json] [--follow] [--from REV] RUN",
		Short: "Print a stored run's events",
		Args:  cobra.ExactArgs(1),
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
			w := cmd.OutOrStdout()
			print := func(e store.Event) error {
				if asJSON {
					b, err := json.Marshal(e)
					if err != nil {
						return err
					}
					fmt.Fprintln(w, string(b))
					return nil
				}
				text, ok := readable(e.Type, e.Data)
				if !ok {
					text = compact(e.Data, 120)
				}
				fmt.Fprintf(w, "%5d  %s  %-32s %s\n", e.Rev, e.TS.UTC().Format("15:04:05.000"), e.Type, text)
				return nil
			}
			if follow {
				err = run.Follow(ctx, from, print)
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
	cmd.Flags().BoolVar(&follow, "follow", false, "keep printing new events until interrupted")
	cmd.Flags().Int64Var(&from, "from", 1, "first revision to print")
	return cmd
}

// compact shortens event data for the table form.
func compact(b []byte, n int) string {
	s := string(b)
	if len(s) > n {
		s = s[:n-1] + "…"
	}
	return s
}
