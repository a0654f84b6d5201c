package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/obversa/obversa/host/graph"
	"github.com/obversa/obversa/host/runstate"
	"github.com/obversa/obversa/host/runview"
	"github.com/obversa/obversa/internal/runecut"
	"github.com/obversa/obversa/internal/shellquote"
	"github.com/obversa/obversa/store"
)

// reportNodes is how many nodes the human form of a result lists before
// pointing at `obversa show`.
const reportNodes = 20

// report prints a run result — the result object with --json; for people
// the outcome, each node's result in one line, and where to look next —
// and returns the exit status for it.
func report(ctx context.Context, w io.Writer, res *runstate.Result, ref runRef, asJSON bool) error {
	dir, sh := ref.String(), ref.Shell()
	if err := stillStored(ctx, ref); err != nil {
		return err
	}
	// A large output lives in an artifact; show the whole of it.
	if out := res.Output; out != nil && out.Artifact != nil {
		if full, err := readOutput(ctx, ref, *out.Artifact); err == nil {
			cp := *res
			cp.Output = full
			res = &cp
		}
	}
	if asJSON {
		writeJSON(w, res)
	} else {
		fmt.Fprintln(w, summary(res, sh))
		if st, alive, err := foldRun(ctx, ref); err == nil {
			s := runview.Summarize(st, dir, time.Now(), alive)
			fmt.Fprintf(w, "nodes: %d/%d done, %s elapsed, usage %s\n", s.Nodes.Done, s.Nodes.Total, duration(s.ElapsedMS), s.Usage)
			printNodeTable(w, runview.Nodes(st, time.Now(), alive), reportNodes, sh)
		}
		if res.Usage != nil {
			fmt.Fprintf(w, "tokens: %s\n", usageLine(res.Usage))
		}
		fmt.Fprintf(w, "record: %s\n", dir)
		fmt.Fprintf(w, "inspect: obversa show %s   obversa logs %s\n", sh, sh)
	}
	return exitFor(res)
}

// exitFor is the exit status of a result: 0 complete, 3 paused, 1 failed.
func exitFor(res *runstate.Result) error {
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
func readOutput(ctx context.Context, r runRef, ref graph.ArtifactRef) (*runstate.Output, error) {
	run, err := r.OpenReadOnly(ctx)
	if err != nil {
		return nil, err
	}
	defer run.Close()
	b, err := run.ReadArtifact(ctx, store.ArtifactRef(ref))
	if err != nil {
		return nil, err
	}
	var out runstate.Output
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// summary is the human form of a result: one line, then one line per
// step a person can take, each naming the run as run (Ref.Shell: a
// command a shell reads as printed).
func summary(res *runstate.Result, run string) string { return summaryDecided(res, run, nil) }

// summaryDecided is summary for a run whose record may hold decisions
// taken since its pause: decided returns the decision recorded for a
// paused approval position that was not carried on yet ("" for none; nil
// knows of none), whose next step is then a plain resume, not approve.
func summaryDecided(res *runstate.Result, run string, decided func(position string) string) string {
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
			// Say why preflight paused (the probe's cause, a plugin's
			// stderr tail), then how to carry on: docs/preflight.md.
			msg := "paused " + res.Code
			if out.Message != "" {
				msg += ": " + out.Message
			}
			return msg + fmt.Sprintf("\n  next: fix the cause, then obversa resume --preflight %s %s", out.PreflightEventID, run)
		case res.Code != "":
			// A message that starts with its own code (a typed error's
			// text, such as WORKSPACE_LEASE's) says the code once.
			return fmt.Sprintf("paused %s: %s", res.Code, strings.TrimPrefix(out.Message, res.Code+": "))
		}
		var w []string
		for _, p := range out.Paused {
			w = append(w, pauseLine(p))
		}
		msg := "paused at " + strings.Join(w, "; ")
		for _, p := range out.Paused {
			if d := decisionOf(decided, p); d != "" {
				msg += fmt.Sprintf("\n  next: obversa resume %s   (%s is recorded for %s; resume carries the run on)", run, d, p.Position)
				continue
			}
			msg += "\n  next: " + pauseHint(p, run)
		}
		return msg
	default:
		msg := "failed " + res.Code
		if out.Budget != "" {
			msg += fmt.Sprintf(" (%s: used %d of %d)", out.Budget, out.Used, out.Limit)
		}
		if len(out.Failed) > 0 {
			msg += ": " + strings.Join(out.Failed, ", ")
		}
		if out.Message != "" {
			// As for a pause: a message that starts with its own code
			// (PLUGIN_CHANGED's) says the code once.
			msg += ": " + strings.TrimPrefix(out.Message, res.Code+": ")
		}
		// Say why each node failed, not only which.
		for _, id := range out.Failed {
			if e, ok := out.Errors[id]; ok {
				line := fmt.Sprintf("\n  %s: %s %s", id, e.Code, e.Message)
				if len(line) > 300 {
					line = runecut.Prefix(line, 299) + "…"
				}
				msg += line
			}
		}
		return msg
	}
}

// decisionOf is the decision decided knows for approval request p, or "".
func decisionOf(decided func(string) string, p graph.PauseRequest) string {
	if decided == nil || p.Kind != graph.PauseApproval || p.Position == "" {
		return ""
	}
	return decided(p.Position)
}

// pauseHint is the command that answers a paused position of run
// (Ref.Shell), the position quoted for a shell too.
func pauseHint(p graph.PauseRequest, run string) string {
	pos := shellquote.Quote(p.Position)
	switch p.Kind {
	case graph.PauseApproval:
		return fmt.Sprintf("obversa approve %s %s   (or approve --deny; approve carries the run on)", run, pos)
	case graph.PauseReconcile:
		return fmt.Sprintf("check whether attempt %s took effect, then obversa resume --position %s --reconciled=done|not-done [--result JSON] %s", p.AttemptID, pos, run)
	}
	return fmt.Sprintf("obversa resume --position %s %s", pos, run)
}

// pauseLine is a paused position as a person reads it: where, what it
// waits for, and why, and which policy said so.
func pauseLine(p graph.PauseRequest) string {
	if p.Position == "" {
		// A pause of the whole run (STORAGE_FULL, OPERATOR_PAUSE): its
		// code is all there is; the result line says why.
		return p.Kind
	}
	line := p.Position + " (" + p.Kind
	if p.Policy != "" {
		line += ", policy " + p.Policy
	}
	line += ")"
	if p.Reason != "" {
		line += ": " + p.Reason
	}
	return line
}

// usageLine is a run's token usage as a person reads it: the measured
// totals, and how many calls measured none (unknown is never zero).
func usageLine(u *runstate.RunUsage) string {
	line := fmt.Sprintf("input %d, output %d, cache read %d, cache creation %d", u.Input, u.Output, u.CacheRead, u.CacheCreation)
	switch {
	case u.UnmeasuredCalls == 1:
		line += "; 1 call measured no usage (unknown, not counted)"
	case u.UnmeasuredCalls > 1:
		line += fmt.Sprintf("; %d calls measured no usage (unknown, not counted)", u.UnmeasuredCalls)
	}
	return line
}

// stillStored returns a RUN_NOT_FOUND failure (exit 1) when the run's
// record was removed or moved while a command carried the run on: the result the
// run reached is kept nowhere, so it is not reported as if it were.
// Other errors opening the record leave the report to say what it can.
func stillStored(ctx context.Context, ref runRef) error {
	run, err := ref.OpenReadOnly(ctx)
	if errors.Is(err, store.ErrRunNotFound) {
		return failedErr(fmt.Errorf("%s: the run's record was removed or moved while the run went on, so what it recorded is not kept: %w", ref, err))
	}
	if err == nil {
		_ = run.Close()
	}
	return nil
}
