package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
	"github.com/muesli/termenv"
	"golang.org/x/sys/unix"

	"github.com/obversa/obversa/host/runview"
	"github.com/obversa/obversa/host/stream"
	"github.com/obversa/obversa/store"
)

// The live view of a run on a terminal (--progress=tty), drawn on stderr
// below the shell's prompt, never full screen. Its last lines are a frame
// redrawn every liveTick: the run's phase, counts, elapsed time and usage,
// then one line per attempt in flight with its elapsed time and the last
// line of text its engine streamed. Failures, retries, pauses and worker
// crashes are printed above the frame as they happen and stay there.
// Everything comes from the shared fold (runview.Live) and stream.jsonl;
// the view decides nothing.
//
// Styles are lipgloss's (colour off with NO_COLOR, or when the terminal
// has none); cursor movement is x/ansi's. Bubble Tea is not used: its v1
// queries the terminal from a package init in every process that links it
// (docs/decisions.md).

// liveTick is how often the frame is redrawn.
const liveTick = 200 * time.Millisecond

// liveStyles colour the view; all plain when colour is off.
type liveStyles struct {
	title, dim, ok, bad, warn lipgloss.Style
}

func newLiveStyles(w io.Writer) liveStyles {
	// The view is drawn only on a terminal, so the renderer is told so:
	// termenv would otherwise take any CI variable to mean "no terminal".
	r := lipgloss.NewRenderer(w, termenv.WithTTY(true))
	if _, off := os.LookupEnv("NO_COLOR"); off {
		r.SetColorProfile(termenv.Ascii)
	}
	return liveStyles{title: r.NewStyle().Bold(true), dim: r.NewStyle().Faint(true),
		ok: r.NewStyle().Foreground(lipgloss.Color("2")).Bold(true), bad: r.NewStyle().Foreground(lipgloss.Color("1")).Bold(true),
		warn: r.NewStyle().Foreground(lipgloss.Color("3")).Bold(true)}
}

// liveView draws a run's progress on a terminal.
type liveView struct {
	mu     sync.Mutex
	live   *runview.Live
	styles liveStyles
	out    *os.File
	drawn  int      // lines of the frame on screen
	above  []string // notices to print above the next frame
}

// startTTY runs the live view until the returned func is called; it then
// takes in everything recorded so far, draws the last frame and returns.
func startTTY(run store.Record, live *runview.Live, out *os.File) func() {
	v := &liveView{live: live, styles: newLiveStyles(out), out: out}
	_, _ = io.WriteString(out, ansi.ResetModeTextCursorEnable)
	stopRecord := followRecord(run, live.State().Rev()+1, v.event, func(err error) {
		v.warn("the record could not be read: " + err.Error())
	})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		err := stream.Follow(ctx, run.Dir(), func(l stream.Line) error {
			v.mu.Lock()
			v.live.Stream(l)
			v.mu.Unlock()
			return nil
		})
		if err != nil && ctx.Err() == nil {
			v.warn("the engines' live output is no longer shown: " + err.Error())
		}
	}()
	go func() {
		defer wg.Done()
		t := time.NewTicker(liveTick)
		defer t.Stop()
		for {
			v.draw(false)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return func() {
		cancel()
		wg.Wait()
		stopRecord()
		v.draw(true)
		_, _ = io.WriteString(out, ansi.SetModeTextCursorEnable)
	}
}

// event folds one recorded event and keeps its notices for the screen.
func (v *liveView) event(e store.Event) {
	v.mu.Lock()
	defer v.mu.Unlock()
	notices, err := v.live.Apply(e)
	if err != nil {
		v.above = append(v.above, v.styles.bad.Render("the record does not fold: "+err.Error()))
		return
	}
	for _, n := range notices {
		v.above = append(v.above, v.notice(n))
	}
}

// warn keeps a line above the frame saying what the view could not do.
func (v *liveView) warn(msg string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.above = append(v.above, v.styles.warn.Render("! view")+"  "+termText(msg))
}

// notice is the line a failure, retry, pause or crash leaves on screen.
func (v *liveView) notice(n runview.Notice) string {
	label, style := n.Kind, v.styles.bad
	switch n.Kind {
	case runview.NoticeFailed:
		label = "✗ failed "
	case runview.NoticeRetry:
		label, style = "↻ retry  ", v.styles.warn
	case runview.NoticePaused:
		label, style = "‖ paused ", v.styles.warn
	case runview.NoticeCrashed:
		label = "! crashed"
	case runview.NoticeReview:
		label, style = "↻ review ", v.styles.warn
	}
	where := n.Position
	if where == "" {
		where = "run"
	}
	return fmt.Sprintf("%s %s  %s: %s", style.Render(label), where, termText(n.Code), termText(n.Message))
}

// size is the terminal's width and height (80×24 when unknown).
func (v *liveView) size() (int, int) {
	ws, err := unix.IoctlGetWinsize(int(v.out.Fd()), unix.TIOCGWINSZ)
	if err != nil || ws.Col == 0 || ws.Row == 0 {
		return 80, 24
	}
	return int(ws.Col), int(ws.Row)
}

// draw replaces the frame on screen, printing pending notices above it;
// the last frame has the counts only.
func (v *liveView) draw(last bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	width, height := v.size()
	var b strings.Builder
	if v.drawn > 1 {
		b.WriteString(ansi.CursorUp(v.drawn - 1))
	}
	b.WriteString("\r" + ansi.EraseScreenBelow)
	for _, line := range v.above {
		b.WriteString(ansi.Truncate(line, width-1, "…") + "\r\n")
	}
	v.above = v.above[:0]
	frame := v.frame(time.Now(), last, height)
	for i, line := range frame {
		if i > 0 {
			b.WriteString("\r\n")
		}
		b.WriteString(ansi.Truncate(line, width-1, "…"))
	}
	v.drawn = len(frame)
	if last {
		b.WriteString("\r\n")
		v.drawn = 0
	}
	_, _ = io.WriteString(v.out, b.String())
}

// frame is the view's lines at time now, fitted to height.
func (v *liveView) frame(now time.Time, last bool, height int) []string {
	p := v.live.Snapshot(now, true)
	s, c := p.Summary, p.Summary.Nodes
	state := v.styles.title.Render(s.Phase)
	switch {
	case s.Phase == "completed":
		state = v.styles.ok.Render(s.Phase)
	case c.Failed > 0 || s.Phase == "failed" || s.Phase == "stopped":
		state = v.styles.bad.Render(s.Phase)
	case s.Phase == "paused":
		state = v.styles.warn.Render(s.Phase)
	}
	parts := []string{fmt.Sprintf("%d/%d done", c.Done, c.Total), fmt.Sprintf("%d running", c.Running)}
	if c.Failed > 0 {
		parts = append(parts, v.styles.bad.Render(fmt.Sprintf("%d failed", c.Failed)))
	}
	if c.Blocked > 0 {
		parts = append(parts, fmt.Sprintf("%d blocked", c.Blocked))
	}
	if c.Skipped > 0 {
		parts = append(parts, fmt.Sprintf("%d skipped", c.Skipped))
	}
	if c.Stopped > 0 {
		parts = append(parts, v.styles.warn.Render(fmt.Sprintf("%d stopped while uncertain", c.Stopped)))
	}
	if c.Paused > 0 {
		parts = append(parts, v.styles.warn.Render(fmt.Sprintf("%d paused", c.Paused)))
	}
	parts = append(parts, duration(s.ElapsedMS), "usage "+s.Usage.String())
	lines := []string{fmt.Sprintf("%s %s · %s", v.styles.title.Render("run "+s.RunID), state, strings.Join(parts, " · "))}
	if last {
		return lines
	}
	// Loops and for_each nodes under way: their round, their instances.
	for _, l := range s.Loops {
		if l.Status == "started" || l.Status == "paused" {
			lines = append(lines, "  loop "+termText(loopLine(l)))
		}
	}
	for _, f := range s.ForEach {
		if f.Status == "started" || f.Status == "paused" {
			lines = append(lines, "  for_each "+termText(forEachLine(f)))
		}
	}
	room := min(len(p.InFlight), max(height-2-len(lines), 1))
	running := 0
	for _, a := range p.InFlight[room:] {
		if a.Status == runview.StatusStarted {
			running++
		}
	}
	lines = append(lines, attemptLines(p.InFlight[:room], v.styles.dim.Render)...)
	if more := len(p.InFlight) - room; more > 0 {
		lines = append(lines, fmt.Sprintf("  … and %d more (%d running)", more, running))
	}
	return lines
}

// attemptLines renders the rows of the attempts shown: position, clock
// (attemptClock) and the last line streamed, rendered by last. Each
// column is padded to its widest cell among them, at least 7 for the
// clock, so the streamed text starts at one column whatever the clocks
// say ("interrupted", "not started").
func attemptLines(shown []runview.Attempt, last func(...string) string) []string {
	posw, clockw := 0, 7
	for _, a := range shown {
		posw = max(posw, ansi.StringWidth(a.Position))
		clockw = max(clockw, ansi.StringWidth(attemptClock(a)))
	}
	lines := make([]string, 0, len(shown))
	for _, a := range shown {
		lines = append(lines, fmt.Sprintf("  %s %*s  %s", padCell(a.Position, posw), clockw, attemptClock(a), last(termText(a.Last))))
	}
	return lines
}

// attemptClock is an attempt's clock column as status and show say it
// (runview.Attempt): its time while it runs, "interrupted" with the time
// it ran until the run was halted, "not started" for a position
// dispatched whose attempt has not begun.
func attemptClock(a runview.Attempt) string {
	switch a.Status {
	case runview.StatusInterrupted:
		return duration(a.ElapsedMS) + " interrupted"
	case runview.StatusDispatched:
		return "not started"
	}
	return duration(a.ElapsedMS)
}
