package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/obversa/obversa/host/graph"
	"github.com/obversa/obversa/host/runstate"
	"github.com/obversa/obversa/host/runview"
	"github.com/obversa/obversa/host/watchdog"
	"github.com/obversa/obversa/plugin/confine"
	"github.com/obversa/obversa/store"
)

// showObject is what `show --json RUN` prints.
type showObject struct {
	Run    runview.Summary  `json:"run"`
	Result *runstate.Result `json:"result,omitempty"`
	Nodes  []runview.Node   `json:"nodes"`
	// Confinement is the confinement in force for the run's plugins on
	// this machine.
	Confinement *watchdog.ConfinementReport `json:"confinement"`
}

func newShowCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "show [--json] RUN [NODE]",
		Short: "Show a run's nodes and their results: text, command output, failures, usage, artifacts",
		Long: `show reads a run's record and prints each node: its status, attempts, elapsed time,
usage, and its result — an engine's final text, a command's exit status with the
tails of its stdout and stderr, a failure's code and cause, what a pause waits for.
With NODE (a node id, or one of its positions), everything about that node: the
whole text, each engine call, the artifacts with their digests.`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ref, err := g.findRun(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			defer ref.Close()
			dir := ref.String()
			st, alive, err := foldRun(cmd.Context(), ref)
			if err != nil {
				return err
			}
			now := time.Now()
			w := cmd.OutOrStdout()
			if len(args) == 2 {
				n, err := showNode(cmd.Context(), st, ref, args[1], now, alive)
				if err != nil {
					return err
				}
				if asJSON {
					writeJSON(w, n)
					return nil
				}
				printNode(w, n)
				return nil
			}
			obj := showObject{Run: runview.Summarize(st, dir, now, alive), Result: st.Result(), Nodes: runview.Nodes(st, now, alive),
				Confinement: watchdog.Confinement(st.Plan(), confine.Detect())}
			if asJSON {
				writeJSON(w, obj)
				return nil
			}
			printRunHeader(w, obj.Run)
			if obj.Result != nil {
				decided := func(pos string) string {
					if n := st.Graph().AtPosition(pos); n != nil && n.Status == graph.StatusPaused {
						return n.Approved
					}
					return ""
				}
				fmt.Fprintf(w, "result:   %s\n", strings.ReplaceAll(summaryDecided(obj.Result, ref.Shell(), decided), "\n", "\n          "))
			}
			fmt.Fprintln(w)
			printNodeTable(w, obj.Nodes, 0, ref.Shell())
			fmt.Fprintln(w)
			printConfinement(w, obj.Confinement)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the run (or the node) as one JSON object")
	return cmd
}

// showNode returns one node named by id or position, reading back a
// result kept as an artifact; held says whether a live owner holds the
// run.
func showNode(ctx context.Context, st *runstate.State, ref runRef, name string, now time.Time, held bool) (runview.Node, error) {
	id := name
	if n := st.Graph().AtPosition(name); n != nil {
		id = n.Name()
	}
	n, ok := runview.NodeOf(st, id, now, held)
	if !ok {
		return n, usageErr(fmt.Errorf("the run has no node %s%s", echoArg(name), runview.DidYouMean(runview.SuggestNode(st, name))))
	}
	if a := runview.ResultArtifact(st.Graph(), id); a != nil {
		run, err := ref.OpenReadOnly(ctx)
		if err != nil {
			return n, failedErr(err)
		}
		defer run.Close()
		b, err := run.ReadArtifact(ctx, store.ArtifactRef(*a))
		if err != nil {
			return n, failedErr(fmt.Errorf("reading the result of %s: %w", id, err))
		}
		n.SetResult(b)
	}
	return n, nil
}

func printRunHeader(w io.Writer, s runview.Summary) {
	fmt.Fprintf(w, "run:      %s (graph %q)\n", s.RunID, s.Graph)
	fmt.Fprintf(w, "record:   %s\n", s.Dir)
	fmt.Fprintf(w, "phase:    %s\n", s.Phase)
	fmt.Fprintf(w, "started:  %s, %s elapsed\n", s.StartedAt.Local().Format("2006-01-02 15:04:05"), duration(s.ElapsedMS))
	c := s.Nodes
	cut := ""
	if c.Interrupted > 0 {
		cut = fmt.Sprintf(", %d interrupted", c.Interrupted)
	}
	if c.Stopped > 0 {
		cut += fmt.Sprintf(", %d stopped while uncertain", c.Stopped)
	}
	fmt.Fprintf(w, "nodes:    %d/%d done (%d passed, %d failed, %d blocked, %d skipped), %d running, %d paused%s\n",
		c.Done, c.Total, c.Passed, c.Failed, c.Blocked, c.Skipped, c.Running, c.Paused, cut)
	fmt.Fprintf(w, "usage:    %s\n", s.Usage)
	printGroups(w, s.Loops, s.ForEach)
}

// printNode is the human form of one node in full.
func printNode(w io.Writer, n runview.Node) {
	fmt.Fprintf(w, "node:     %s (%s", n.ID, n.Kind)
	switch {
	case n.Lane != "":
		fmt.Fprintf(w, ", lane %s", n.Lane)
	case n.Binding != "":
		fmt.Fprintf(w, ", binding %s", n.Binding)
	}
	fmt.Fprintln(w, ")")
	fmt.Fprintf(w, "status:   %s\n", shownStatus(n))
	if n.Review != nil {
		fmt.Fprintf(w, "review:   %s\n", reviewLine(*n.Review))
	}
	if n.Loop != nil {
		fmt.Fprintf(w, "loop:     %s\n", loopLine(*n.Loop))
	}
	if n.ForEach != nil {
		fmt.Fprintf(w, "for_each: %s\n", forEachLine(*n.ForEach))
	}
	if n.Position != "" {
		fmt.Fprintf(w, "position: %s (attempt %d)\n", n.Position, n.Attempts)
	}
	if n.StartedAt != nil {
		fmt.Fprintf(w, "elapsed:  %s\n", duration(n.ElapsedMS))
	}
	if n.Usage != nil {
		fmt.Fprintf(w, "usage:    %s\n", n.Usage)
	}
	if n.Approved != "" {
		fmt.Fprintf(w, "approval: %s\n", n.Approved)
	}
	if p := n.Pause; p != nil {
		fmt.Fprintf(w, "paused:   waits for %s at %s\n", p.Kind, p.Position)
	}
	if b := n.Blocked; b != nil {
		fmt.Fprintf(w, "blocked:  %s %s\n", b.Code, b.Message)
	}
	if f := n.Failure; f != nil {
		fmt.Fprintf(w, "failure:  %s at %s", f.Code, f.Position)
		if f.FailureKind != "" {
			fmt.Fprintf(w, " (%s)", f.FailureKind)
		}
		fmt.Fprintf(w, "\n%s\n", indent(f.Message))
	}
	for _, c := range n.Calls {
		fmt.Fprintf(w, "call %d:   %s", c.Sequence, c.Outcome)
		if c.FailureKind != "" {
			fmt.Fprintf(w, " (%s)", c.FailureKind)
		}
		if len(c.Effective) > 0 {
			fmt.Fprintf(w, " by %s", c.Effective)
		}
		if c.Substituted {
			fmt.Fprint(w, " (a substitution: neither the lane's target nor in its known_substitutions)")
		}
		fmt.Fprintf(w, ", usage %s\n", c.Usage)
	}
	if n.ExitCode != nil {
		fmt.Fprintf(w, "exit:     %d\n", *n.ExitCode)
	}
	if n.Stdout != "" {
		fmt.Fprintf(w, "stdout (last %d lines):\n%s\n", runview.TailLines, indent(n.Stdout))
	}
	if n.Stderr != "" {
		fmt.Fprintf(w, "stderr (last %d lines):\n%s\n", runview.TailLines, indent(n.Stderr))
	}
	if n.Text != "" {
		fmt.Fprintf(w, "text:\n%s\n", indent(n.Text))
	}
	if len(n.Result) > 0 {
		fmt.Fprintf(w, "result:\n%s\n", indent(string(n.Result)))
	}
	for _, a := range n.Artifacts {
		fmt.Fprintf(w, "artifact: %s %d bytes %s (%s)\n", a.Digest, a.Size, a.MediaType, a.Purpose)
	}
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n  ")
}
