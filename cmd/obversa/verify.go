package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/obversa/obversa/host/runstate"
	"github.com/obversa/obversa/internal/shellquote"
	"github.com/obversa/obversa/store"
)

// verified is the --json result of verify: the run directory, whether it
// passed, and the store's report.
type verified struct {
	Dir string `json:"dir"`
	OK  bool   `json:"ok"`
	store.Report
}

func newVerifyCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "verify [--json] RUN",
		Short: "Re-check a stored run's hash chain and every referenced artifact",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ref, err := g.findRun(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			defer ref.Close()
			rep, err := ref.Verify(cmd.Context())
			if err != nil && len(rep.Faults) == 0 {
				return failedErr(err)
			}
			w := cmd.OutOrStdout()
			note := checkSnapshot(cmd.Context(), ref, &rep)
			if note != "" && !asJSON {
				fmt.Fprintln(w, note)
			}
			if asJSON {
				if rep.Faults == nil {
					rep.Faults = []store.Fault{}
				}
				writeJSON(w, verified{Dir: ref.String(), OK: len(rep.Faults) == 0, Report: rep})
				if len(rep.Faults) > 0 {
					return &exitError{code: exitFailed}
				}
				return nil
			}
			indexFault := len(rep.Faults) > 0 && rep.Faults[0].File == "events.jsonl.idx"
			switch {
			case rep.TornBytes > 0 && indexFault:
				// Without a trustworthy index a torn write cannot be told
				// from a committed event cut short.
				fmt.Fprintf(w, "torn-looking tail: %d bytes after event %d (%s); the damaged index cannot tell whether they held a committed event\n",
					rep.TornBytes, rep.Events, rep.TornReason)
			case rep.TornBytes > 0:
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
				case f.File != "":
					fmt.Fprintf(w, "fault: %s: %s\n", f.File, f.Problem)
				case f.Artifact != "":
					fmt.Fprintf(w, "fault: artifact %s: %s\n", f.Artifact, f.Problem)
				default:
					fmt.Fprintf(w, "fault: line %d (rev %d): %s\n", f.Line, f.Rev, f.Problem)
				}
			}
			faults := fmt.Sprintf("%d faults", len(rep.Faults))
			if len(rep.Faults) == 1 {
				faults = "1 fault"
			}
			if indexFault {
				idx := filepath.Join(ref.String(), rep.Faults[0].File)
				shows := "a backup shows"
				if len(rep.Faults) > 1 {
					shows = "the other faults (or a backup) show"
				}
				return &exitError{code: exitFailed, err: fmt.Errorf("%s in %s; %s records which events were committed: if %s "+
					"events.jsonl is as it should be, move the index aside (mv %s %s.bad) and the next open rebuilds it",
					faults, ref, rep.Faults[0].File, shows, idx, idx)}
			}
			return &exitError{code: exitFailed, err: fmt.Errorf("%s in %s", faults, ref)}
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as one JSON object")
	return cmd
}

// faultSnapshot is the verify fault code of a fold snapshot that is
// damaged, of another record, or different from a full fold.
const faultSnapshot = "CORRUPT_FOLD_SNAPSHOT"

// checkSnapshot checks the run's fold snapshot against a full fold of the
// record (runstate.CheckSnapshot) when the record itself passed: an
// invalid one is added to rep as a fault naming the file and how to
// recover; one written by another version is no fault (readers ignore it)
// and comes back as a note to print.
func checkSnapshot(ctx context.Context, ref runRef, rep *store.Report) (note string) {
	if len(rep.Faults) > 0 {
		return ""
	}
	run, err := ref.OpenReadOnly(ctx)
	if err != nil {
		return ""
	}
	defer run.Close()
	err = runstate.CheckSnapshot(ctx, run, run.Dir())
	path := filepath.Join(run.Dir(), runstate.SnapshotFile)
	switch {
	case err == nil:
		return ""
	case errors.Is(err, runstate.ErrSnapshotStale):
		return fmt.Sprintf("note: %s: %v; readers ignore it and fold the whole record until the next worker writes a new one", path, err)
	case errors.Is(err, runstate.ErrSnapshotInvalid):
		rep.Faults = append(rep.Faults, store.Fault{Code: faultSnapshot, File: runstate.SnapshotFile,
			Problem: fmt.Sprintf("%v; it is a cache of the fold, not the record: delete it (rm %s) and readers fold the whole record", err, shellquote.Quote(path))})
		return ""
	}
	rep.Faults = append(rep.Faults, store.Fault{Code: faultSnapshot, File: runstate.SnapshotFile,
		Problem: fmt.Sprintf("the record does not fold to check the snapshot against: %v", err)})
	return ""
}
