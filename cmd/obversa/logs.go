package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/signal"
	"syscall"

	"github.com/charmbracelet/x/ansi"
	"github.com/spf13/cobra"

	"github.com/obversa/obversa/host/runview"
	"github.com/obversa/obversa/host/stream"
	"github.com/obversa/obversa/host/watchdog"
)

func newLogsCmd(g *globals) *cobra.Command {
	var asJSON, follow bool
	var node string
	cmd := &cobra.Command{
		Use:   "logs [--node NODE] [--follow] [--json] RUN",
		Short: "Print what the run's engines streamed: text, thinking, tool use, usage (stream.jsonl)",
		Long: `logs prints the live output of a run's engine calls, kept beside the record in
stream.jsonl: each line under the position it belongs to. It is for watching and
reading, not the record: it is capped (storage.max_stream_bytes, oldest output
dropped first, and said so), redacted of known secrets, and a crash may cut its
last lines. Results, usage totals and failures are in the record (obversa show).

  obversa logs RUN                 everything so far
  obversa logs --node draft RUN    one node's attempts
  obversa logs --follow RUN        …and what comes, until the run ends

--follow exits 0 once the run has ended (completed, failed or stopped) and
everything streamed before its end is printed. A paused run, or one no
watchdog holds (interrupted), can be resumed: --follow keeps following it
until it ends or you interrupt.
  obversa logs --json RUN          one stream line per line, as stored`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ref, err := g.findRun(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			defer ref.Close()
			// The live output stream is kept beside the record on the
			// host that ran the attempts.
			dir, err := ref.LocalDir(cmd.Context())
			if err != nil {
				return failedErr(err)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			if node != "" {
				st, _, err := foldRun(ctx, ref)
				if err != nil {
					return err
				}
				if !runview.Streams(st.Graph(), node) {
					return usageErr(fmt.Errorf("the run has no node %s%s", echoArg(node), runview.DidYouMean(runview.SuggestNode(st, node))))
				}
			}
			p := &logPrinter{w: cmd.OutOrStdout(), node: node, asJSON: asJSON, width: 12}
			if follow {
				err = followLogs(ctx, ref, dir, p.line)
			} else {
				err = stream.Read(ctx, dir, p.line)
			}
			if err != nil {
				return failedErr(err)
			}
			p.flush()
			return nil
		},
	}
	cmd.Flags().StringVar(&node, "node", "", "only this node's attempts")
	cmd.Flags().BoolVar(&follow, "follow", false, "keep printing what the engines stream until the run ends (a paused run: until interrupted)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print each stream line as one JSON object, as stored")
	return cmd
}

// followLogs passes fn the lines of the run's stream in dir as they are
// written until the run is over (watchdog.WaitOver) and the lines written
// before its end are passed on, or ctx ends.
func followLogs(ctx context.Context, ref runRef, dir string, fn func(stream.Line) error) error {
	run, err := ref.OpenReadOnly(ctx)
	if err != nil {
		return err
	}
	defer run.Close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ended, waited := make(chan struct{}), make(chan error, 1)
	go func() {
		err := watchdog.WaitOver(ctx, ref, run)
		if err == nil {
			close(ended)
		} else {
			cancel() // the record cannot say when the run ends
		}
		waited <- err
	}()
	err = stream.FollowUntil(ctx, dir, ended, fn)
	cancel()
	if werr := <-waited; err == nil && werr != nil && !errors.Is(werr, context.Canceled) {
		return werr
	}
	return err
}

// logPrinter prints stream lines: as stored (--json) or joined into
// lines for people, each under its position.
type logPrinter struct {
	w      io.Writer
	node   string
	asJSON bool
	lines  stream.Lines
	// width aligns the text after positions; it grows with the longest
	// position seen.
	width int
}

func (p *logPrinter) line(l stream.Line) error {
	if p.node != "" && l.Node != p.node && l.Kind != stream.KindDropped {
		return nil
	}
	if p.asJSON {
		writeJSON(p.w, l)
		return nil
	}
	p.print(p.lines.Add(l))
	return nil
}

func (p *logPrinter) flush() {
	if !p.asJSON {
		p.print(p.lines.Flush())
	}
}

func (p *logPrinter) print(shown []stream.Shown) {
	for _, s := range shown {
		prefix := s.Prefix()
		if prefix == "" {
			prefix = "run"
		}
		p.width = max(p.width, ansi.StringWidth(prefix))
		fmt.Fprintf(p.w, "%s │ %s\n", padCell(prefix, p.width), s.Text)
	}
}
