package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/obversa/obversa/host/graph"
	"github.com/obversa/obversa/host/runstate"
	"github.com/obversa/obversa/host/runview"
	"github.com/obversa/obversa/store"
)

// Progress modes of run, resume and approve (--progress).
const (
	progressPlain = "plain" // one line per event that matters
	progressTTY   = "tty"   // the live view (livetty.go)
	progressNone  = "none"
)

// isTerminal reports whether f is a terminal: whether it answers the
// request for its terminal attributes (termiosRequest).
func isTerminal(f interface{ Fd() uintptr }) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), termiosRequest)
	return err == nil
}

// dumbTerminal reports a terminal that cannot move its cursor.
func dumbTerminal() bool { return os.Getenv("TERM") == "dumb" }

// addProgressFlag adds --progress[=plain|tty|none] to cmd; a bare
// --progress means plain.
func addProgressFlag(cmd *cobra.Command, p *string) {
	cmd.Flags().StringVar(p, "progress", "", "how to show progress on stderr: tty (a live view; the default on a terminal), plain (a line per event; --progress alone; the default with TERM=dumb) or none (the default on a pipe or file, and with --json)")
	cmd.Flags().Lookup("progress").NoOptDefVal = progressPlain
}

// progressMode decides how progress is shown on stderr: as asked, else
// the live view on a terminal that can draw it, plain lines on one that
// cannot (TERM=dumb), none on a pipe or file or with --json. --progress
// alone asks for plain lines; --progress=tty on TERM=dumb gets plain lines.
func progressMode(flag string, asJSON bool) (string, error) {
	switch flag {
	case "":
		switch {
		case asJSON:
			return progressNone, nil
		case isTerminal(os.Stderr) && !dumbTerminal():
			return progressTTY, nil
		case isTerminal(os.Stderr):
			return progressPlain, nil
		}
		// A pipe or a file gets the result alone unless progress is
		// asked for: logs of scripts stay as short as before.
		return progressNone, nil
	case progressTTY:
		if dumbTerminal() {
			return progressPlain, nil
		}
		return flag, nil
	case progressPlain, progressNone:
		return flag, nil
	}
	return "", usageErr(fmt.Errorf("--progress=%s: use tty, plain or none", flag))
}

// watch shows a run's progress while it runs, reading its record through
// the shared fold and, for the live view, its stream.jsonl.
type watch struct {
	stop func()
}

// watchRun starts showing the progress of the run at dir on w in mode;
// Stop shows what was recorded up to then and ends. A mode of none, or a
// record that cannot be read, shows nothing.
func watchRun(ref runRef, mode string, w *os.File) *watch {
	if mode == progressNone {
		return &watch{stop: func() {}}
	}
	run, err := ref.OpenReadOnly(context.Background())
	if err != nil {
		return &watch{stop: func() {}}
	}
	st, err := runstate.LoadWithSnapshot(context.Background(), run, run.Dir())
	if err != nil {
		run.Close()
		return &watch{stop: func() {}}
	}
	var stop func()
	if mode == progressTTY {
		stop = startTTY(run, runview.NewLive(st, ref.String()), w)
	} else {
		stop = startPlain(run, st.Rev()+1, w)
	}
	return &watch{stop: func() { stop(); run.Close() }}
}

// Stop ends the view once it has shown everything recorded so far.
func (w *watch) Stop() { w.stop() }

// followRetry is how long the view waits before it follows the record
// again after a read failed (a database that is down, a file it could not
// read).
const followRetry = time.Second

// followRecord calls fn for each event recorded after the fold's
// revision, in order, until the returned func is called; that func then
// hands fn what is left and returns. When reading the record fails, fail
// is told once per failure that differs from the last one, and the view
// follows again from the next event after followRetry, so that it goes
// on once the record can be read again.
func followRecord(run store.Record, from int64, fn func(store.Event), fail func(error)) func() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	var mu sync.Mutex
	last := from - 1
	report := func(e store.Event) error {
		mu.Lock()
		defer mu.Unlock()
		if e.Rev > last {
			fn(e)
			last = e.Rev
		}
		return nil
	}
	next := func() int64 {
		mu.Lock()
		defer mu.Unlock()
		return last + 1
	}
	var told string
	failed := func(err error) {
		if err == nil || ctx.Err() != nil || err.Error() == told {
			return
		}
		told = err.Error()
		fail(err)
	}
	// A store that waits out an outage (a database) tells it here, once,
	// as a read failure is.
	fctx := store.WithFollowNotice(ctx, func(err error) {
		if err != nil {
			failed(err)
			return
		}
		told = ""
	})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			failed(run.Follow(fctx, next(), report))
			t := time.NewTimer(followRetry)
			select {
			case <-ctx.Done():
			case <-t.C:
			}
			t.Stop()
		}
	}()
	return func() {
		cancel()
		<-done
		if err := run.Read(context.Background(), next(), report); err != nil && err.Error() != told {
			fail(err)
		}
	}
}

// startPlain prints one line per event that matters to a person watching.
func startPlain(run store.Record, from int64, w io.Writer) func() {
	next := plainLines()
	return followRecord(run, from, func(e store.Event) {
		if line := next(e); line != "" {
			fmt.Fprintln(w, termText(line))
		}
	}, func(err error) {
		fmt.Fprintln(w, termText("progress: the record could not be read: "+err.Error()))
	})
}

// plainLines returns progressLine for a stream of events followed in order,
// except that a worker's start reads as a restart only after this follower saw
// a worker end: the first worker a resume starts carries the restart count of
// the run's earlier crashes (run:worker-started restart), and is no restart.
func plainLines() func(store.Event) string {
	exited := false
	return func(e store.Event) string {
		switch e.Type {
		case runstate.EventWorkerExited:
			exited = true
		case runstate.EventWorkerStarted:
			was := exited
			exited = false
			if !was {
				return ""
			}
		}
		return progressLine(e)
	}
}

// stepWords head the progress lines of loop and for_each steps.
var stepWords = map[string]string{graph.EventNodeExpanded: "for_each", graph.EventLoopStarted: "loop",
	graph.EventRoundStarted: "round", graph.EventLoopReviewed: "review", graph.EventLoopFinished: "loop end"}

func progressLine(e store.Event) string {
	if word, ok := stepWords[e.Type]; ok {
		if text, ok := readable(e.Type, e.Data); ok {
			return fmt.Sprintf("  %-10s %s", word, text)
		}
	}
	var d struct {
		Node       string             `json:"node"`
		Position   string             `json:"position"`
		Code       string             `json:"code"`
		Message    string             `json:"message"`
		Request    graph.PauseRequest `json:"request"`
		Dispatches []graph.Dispatch   `json:"dispatches"`
		Signal     string             `json:"signal"`
		ExitCode   int                `json:"exit_code"`
		Restart    int                `json:"restart"`
	}
	_ = json.Unmarshal(e.Data, &d)
	switch e.Type {
	case graph.EventNodeDispatched:
		var ps []string
		for _, x := range d.Dispatches {
			ps = append(ps, x.Position)
		}
		return "  dispatched " + strings.Join(ps, ", ")
	case graph.EventNodeCompleted:
		return "  completed  " + d.Position
	case graph.EventNodeFailed:
		return fmt.Sprintf("  failed     %s: %s %s", d.Position, d.Code, d.Message)
	case graph.EventNodePaused:
		if d.Request.Kind == graph.PauseReconcile && d.Request.Reason != "" {
			return fmt.Sprintf("  paused     %s: waits for %s (%s)", d.Position, d.Request.Kind, d.Request.Reason)
		}
		return fmt.Sprintf("  paused     %s: waits for %s", d.Position, d.Request.Kind)
	case graph.EventNodeResumed:
		return "  resumed    " + d.Position
	case runstate.EventWorkerExited:
		// Whether a restart follows is the watchdog's next event to say.
		return "  worker " + runstate.Exit{ExitCode: d.ExitCode, Signal: d.Signal, Code: d.Code, Message: d.Message}.Cause()
	case runstate.EventWorkerStarted:
		if d.Restart > 0 {
			return fmt.Sprintf("  worker restarted (restart %d)", d.Restart)
		}
	}
	return ""
}
