package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/obversa/obversa/host/graph"
	"github.com/obversa/obversa/host/runstate"
	"github.com/obversa/obversa/host/watchdog"
	"github.com/obversa/obversa/store"
)

func newRunCmd(g *globals) *cobra.Command {
	var runID string
	var asJSON, tofu, progress bool
	cmd := &cobra.Command{
		Use:   "run [--run-id ID] [--json] FILE",
		Short: "Validate a run file, pin its plugins, and run its graph under a watchdog",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := stopContext()
			defer stop()
			po := watchdog.PrepareOptions{RunID: runID, TrustOnFirstUse: tofu}
			// Flags given on the command line win over the run file.
			if cmd.Flags().Changed("storage") {
				po.Storage = g.storage
			}
			if cmd.Flags().Changed("namespace") {
				po.Namespace = g.namespace
			}
			pr, err := watchdog.Prepare(ctx, args[0], po)
			if err != nil {
				return refusal(err)
			}
			printWarnings(os.Stderr, pr.Warnings)
			run, owner, err := watchdog.Create(ctx, pr)
			if err != nil {
				if errors.Is(err, store.ErrRunExists) {
					return existingRun(ctx, pr, err)
				}
				if errors.Is(err, store.ErrKnownSecret) || errors.Is(err, store.ErrStorageLimitExceeded) {
					return usageErr(fmt.Errorf("the run was not started: %w", err))
				}
				return failedErr(err)
			}
			defer run.Close()
			fmt.Fprintf(os.Stderr, "run %s: record in %s\n", pr.Plan.RunID, run.Dir())
			opts := watchdog.SuperviseOptions{Owner: owner}
			if progress || (!asJSON && isTerminal(os.Stderr)) {
				opts.Progress = progressPrinter(os.Stderr)
			}
			res, err := watchdog.Supervise(ctx, run, opts)
			if err != nil {
				return failedErr(err)
			}
			return report(cmd.OutOrStdout(), res, run.Dir(), asJSON)
		},
	}
	cmd.Flags().StringVar(&runID, "run-id", "", "run id (default: time-based)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result object {run_id, kind, code, output}")
	cmd.Flags().BoolVar(&tofu, "lock", false, "pin unpinned plugins to their current digest and write obversa.lock.hcl")
	cmd.Flags().BoolVar(&progress, "progress", false, "print progress lines even when stderr is not a terminal")
	return cmd
}

// existingRun explains why a run id cannot be started again: another
// watchdog holds it (PROCESS_LOCKED, exit 1), or it exists and can only be
// resumed (exit 2).
func existingRun(ctx context.Context, pr *watchdog.Prepared, cause error) error {
	st, err := store.Open(pr.Plan.Storage.Directory, pr.Plan.Namespace)
	if err != nil {
		return failedErr(err)
	}
	run, err := store.OpenRunDir(ctx, st.RunDir(pr.Plan.RunID), store.Policy{})
	if err != nil {
		return failedErr(err)
	}
	defer run.Close()
	owner, err := run.Lock(ctx)
	if err != nil {
		return failedErr(err)
	}
	_ = owner.Release()
	return usageErr(fmt.Errorf("%w; choose another --run-id, or carry it on with `obversa resume %s`", cause, run.Dir()))
}

// stopContext is cancelled by the first SIGINT or SIGTERM (a clean stop);
// a second one exits at once, and the worker follows through its
// parent-death signal.
func stopContext() (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		<-sig
		fmt.Fprintln(os.Stderr, "stopping: the run is being stopped cleanly (press Ctrl-C again to force)")
		cancel()
		<-sig
		os.Exit(130)
	}()
	return ctx, func() { signal.Stop(sig); cancel() }
}

// refusal turns a Prepare error into a usage error; run file diagnostics
// travel as diagnostics, printed with their source snippets (or in the
// refusal object of --json).
func refusal(err error) error {
	var de *watchdog.DiagnosticsError
	if errors.As(err, &de) {
		return diagsErr(de.Diags)
	}
	return usageErr(fmt.Errorf("the run was not started: %w", err))
}

// report prints a run result and returns the exit status for it.
func report(w io.Writer, res *runstate.Result, dir string, asJSON bool) error {
	// A large output lives in an artifact; show the whole of it.
	if out := res.Output; out != nil && out.Artifact != nil {
		if full, err := readOutput(dir, *out.Artifact); err == nil {
			cp := *res
			cp.Output = full
			res = &cp
		}
	}
	if asJSON {
		b, _ := json.Marshal(res)
		fmt.Fprintln(w, string(b))
	} else {
		fmt.Fprintln(w, summary(res))
		fmt.Fprintf(w, "record: %s\n", dir)
		fmt.Fprintf(w, "inspect: obversa status %s   obversa events %s\n", dir, dir)
	}
	switch {
	case res.Kind == runstate.KindComplete:
		return nil
	case res.Kind == runstate.KindPaused:
		return &exitError{code: exitPaused}
	default:
		return &exitError{code: exitFailed}
	}
}

// readOutput reads back a run output kept as an artifact.
func readOutput(dir string, ref graph.ArtifactRef) (*runstate.Output, error) {
	run, err := store.OpenRunDirReadOnly(context.Background(), dir)
	if err != nil {
		return nil, err
	}
	defer run.Close()
	b, err := run.ReadArtifact(context.Background(), store.ArtifactRef(ref))
	if err != nil {
		return nil, err
	}
	var out runstate.Output
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// summary is the one-line human form of a result.
func summary(res *runstate.Result) string {
	out := res.Output
	if out == nil {
		out = &runstate.Output{}
	}
	switch res.Kind {
	case runstate.KindComplete:
		return fmt.Sprintf("complete: %d nodes passed", len(out.Nodes))
	case runstate.KindPaused:
		switch {
		case out.PreflightEventID != "":
			return fmt.Sprintf("paused %s: resume with `obversa resume --preflight %s RUN`", res.Code, out.PreflightEventID)
		case res.Code != "":
			return fmt.Sprintf("paused %s: %s", res.Code, out.Message)
		}
		var w []string
		for _, p := range out.Paused {
			w = append(w, p.Position+" ("+p.Kind+")")
		}
		msg := "paused at " + strings.Join(w, ", ")
		for _, p := range out.Paused {
			switch p.Kind {
			case graph.PauseApproval:
				msg += fmt.Sprintf("\n  next: obversa approve [--deny] RUN %s, then obversa resume --position %s RUN", p.Position, p.Position)
			case graph.PauseReconcile:
				msg += fmt.Sprintf("\n  next: check whether attempt %s took effect, then obversa resume --position %s --reconciled=done|not-done RUN", p.AttemptID, p.Position)
			}
		}
		return msg
	default:
		msg := "failed " + res.Code
		if len(out.Failed) > 0 {
			msg += ": " + strings.Join(out.Failed, ", ")
		}
		if out.Message != "" {
			msg += ": " + out.Message
		}
		// Say why each node failed, not only which.
		for _, id := range out.Failed {
			if e, ok := out.Errors[id]; ok {
				line := fmt.Sprintf("\n  %s: %s %s", id, e.Code, e.Message)
				if len(line) > 300 {
					line = line[:299] + "…"
				}
				msg += line
			}
		}
		return msg
	}
}
