package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/obversa/obversa/store"
)

func newVerifyCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "verify RUN",
		Short: "Re-check a stored run's hash chain and every referenced artifact",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := g.runDir(args[0])
			if err != nil {
				return err
			}
			rep, err := store.Verify(cmd.Context(), dir)
			if err != nil && len(rep.Faults) == 0 {
				return failedErr(err)
			}
			w := cmd.OutOrStdout()
			if rep.TornBytes > 0 {
				// Not corruption: a write a crash cut short. The next open
				// moves it aside; verify changes nothing.
				fmt.Fprintf(w, "torn tail: %d bytes after event %d (%s); the next open moves them aside to events.jsonl.torn-<time>\n",
					rep.TornBytes, rep.Events, rep.TornReason)
			}
			if len(rep.Faults) == 0 {
				fmt.Fprintf(w, "ok: %d events, %d artifacts\n", rep.Events, rep.Artifacts)
				return nil
			}
			for _, f := range rep.Faults {
				switch {
				case f.Artifact != "":
					fmt.Fprintf(w, "fault: artifact %s: %s\n", f.Artifact, f.Problem)
				default:
					fmt.Fprintf(w, "fault: line %d (rev %d): %s\n", f.Line, f.Rev, f.Problem)
				}
			}
			return &exitError{code: exitFailed, err: fmt.Errorf("%d faults in %s", len(rep.Faults), dir)}
		},
	}
}
