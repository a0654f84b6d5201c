package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/charmbracelet/x/vt"
	"github.com/creack/pty"
)

// Terminal size of the pseudo-terminal tests.
const termCols, termRows = 120, 40

// ptyTerm is obversa running on a real pseudo-terminal whose output a
// terminal emulator renders into a screen, as a person would see it.
type ptyTerm struct {
	mu   sync.Mutex
	emu  *vt.Emulator
	ptmx *os.File
	cmd  *exec.Cmd
	read chan struct{} // closed once the program's output is all read
}

// onTerminal starts obversa with args in dir on a pseudo-terminal of
// termCols×termRows (stdin, stdout and stderr), with env added.
func onTerminal(t *testing.T, dir string, env []string, args ...string) *ptyTerm {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "obversa"), args...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "TERM=xterm-256color"), env...)
	ptmx, err := pty.StartWithSize(cmd, &pty.Winsize{Cols: termCols, Rows: termRows})
	if err != nil {
		t.Fatal(err)
	}
	term := &ptyTerm{emu: vt.NewEmulator(termCols, termRows), ptmx: ptmx, cmd: cmd, read: make(chan struct{})}
	go func() {
		defer close(term.read)
		buf := make([]byte, 32<<10)
		for {
			n, err := ptmx.Read(buf)
			if n > 0 {
				term.mu.Lock()
				_, _ = term.emu.Write(buf[:n])
				term.mu.Unlock()
			}
			if err != nil {
				return
			}
		}
	}()
	// What the terminal answers (to a status query) goes back to the
	// program, as a real terminal's answer would.
	go func() { _, _ = io.Copy(ptmx, term.emu) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = term.emu.Close()
		_ = ptmx.Close()
	})
	return term
}

// screen returns the rendered screen's text, one line per row.
func (term *ptyTerm) screen() string {
	term.mu.Lock()
	defer term.mu.Unlock()
	return term.emu.String()
}

// waitScreen waits until ok accepts the screen, failing after timeout.
func (term *ptyTerm) waitScreen(t *testing.T, timeout time.Duration, what string, ok func(string) bool) string {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		s := term.screen()
		if ok(s) {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s; the screen:\n%s", timeout, what, s)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// wait waits for the program to exit and its output to be rendered, and
// returns its exit status.
func (term *ptyTerm) wait(t *testing.T) int {
	t.Helper()
	err := term.cmd.Wait()
	select {
	case <-term.read:
	case <-time.After(5 * time.Second):
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0
}

// fiftyNodes is a run file of 50 engine nodes in five waves of ten (each
// depends on the node ten before it), eight at a time, whose engine
// streams three lines 150 ms apart; node n07 fails every time, so n17,
// n27, n37 and n47 are blocked.
func fiftyNodes(t *testing.T) (runFile, dir string) {
	t.Helper()
	var nodes strings.Builder
	for i := range 50 {
		deps := "[]"
		if i >= 10 {
			deps = fmt.Sprintf(`["n%02d"]`, i-10)
		}
		fmt.Fprintf(&nodes, "  node \"n%02d\" {\n    lane = \"w\"\n    prompt = \"step %d\"\n    depends_on = %s\n  }\n", i, i, deps)
	}
	runFile = writeRunFile(t, `
workspace {
  root     = "."
  provider = "none"
}
plugin "mock" {
  type   = "engine"
  path   = "BIN/mock-engine"
  config = {
    default   = { text = "reading the step\nweighing it\nanswer: done", stream_interval = "150ms" }
    responses = [{ node = "n07", fail = { kind = "unknown", message = "the model wandered off" } }]
  }
}
lane "w" {
  requested = { adapter = "mock", provider = "local", model_family = "scripted", model = "m1", tools = [] }
}
graph "dag" {
  global_concurrency = 8
`+nodes.String()+"}\n")
	dir = filepath.Dir(runFile)
	if r := obversa(t, dir, "plugin", "lock", runFile); r.code != 0 {
		t.Fatalf("lock: %s", r.stderr)
	}
	return runFile, dir
}

var (
	inFlightLine = regexp.MustCompile(`(?m)^  dag/n\d\d/1 +\d+(ms|\.\d+s)  (reading the step|weighing it|answer: done)$`)
	liveHeader   = regexp.MustCompile(`(?m)^run \S+ running · \d+/50 done · \d running`)
)

// TestLiveViewOnATerminal: `obversa run` of a 50-node graph on a
// terminal shows a live view — counts, and each attempt in flight with the
// last line its engine streamed — keeps the failure and the retry on
// screen with their code and cause, and ends with the final counts and
// each node's result, the live lines gone.
func TestLiveViewOnATerminal(t *testing.T) {
	t.Parallel()
	runFile, dir := fiftyNodes(t)
	term := onTerminal(t, dir, nil, "run", runFile)
	term.waitScreen(t, 30*time.Second, "attempts in flight with their streamed text", func(s string) bool {
		return liveHeader.MatchString(s) && inFlightLine.MatchString(s)
	})
	if code := term.wait(t); code != exitFailed {
		t.Fatalf("run: exit %d, want %d:\n%s", code, exitFailed, term.screen())
	}
	s := term.screen()
	for _, want := range []string{
		"↻ retry   dag/n07/1  EFFECT_FAILED: unknown: the model wandered off",
		"✗ failed  dag/n07/2  EFFECT_FAILED: unknown: the model wandered off",
		"failed · 50/50 done · 0 running · 1 failed · 4 blocked",
		"failed DAG_NODE_FAILED: n07, n17, n27, n37, n47",
		"n07: EFFECT_FAILED unknown: the model wandered off",
		"nodes: 50/50 done",
		"  n17   blocked",
		"  n00   passed",
		"reading the step…",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("the final screen has no %q:\n%s", want, s)
		}
	}
	if inFlightLine.MatchString(s) || liveHeader.MatchString(s) {
		t.Errorf("the live lines are still on the final screen:\n%s", s)
	}
	if strings.Contains(s, "\x1b") || strings.Contains(s, "[0m") {
		t.Errorf("escape codes shown as text:\n%s", s)
	}
}

// TestLiveViewColour: the live view colours the outcome, and NO_COLOR
// turns colour off; TERM=dumb gets plain lines instead of a live view.
func TestLiveViewColour(t *testing.T) {
	t.Parallel()
	runFile := example(t, "quickstart")
	dir := filepath.Dir(runFile)
	if r := obversa(t, dir, "plugin", "lock", runFile); r.code != 0 {
		t.Fatalf("lock: %s", r.stderr)
	}
	outcome := func(env ...string) (colour bool, screen string) {
		term := onTerminal(t, dir, env, "run", runFile)
		if code := term.wait(t); code != 0 {
			t.Fatalf("run %v: exit %d:\n%s", env, code, term.screen())
		}
		term.mu.Lock()
		defer term.mu.Unlock()
		for y := range termRows {
			for x := range termCols - 9 {
				var word strings.Builder
				for i := range 9 {
					if c := term.emu.CellAt(x+i, y); c != nil {
						word.WriteString(c.Content)
					}
				}
				if word.String() == "completed" {
					return term.emu.CellAt(x, y).Style.Fg != nil, term.emu.String()
				}
			}
		}
		return false, term.emu.String()
	}
	if colour, s := outcome(); !colour {
		t.Errorf("the outcome is not coloured:\n%s", s)
	}
	if colour, s := outcome("NO_COLOR=1"); colour || !strings.Contains(s, "completed · 3/3 done") {
		t.Errorf("NO_COLOR: coloured %v:\n%s", colour, s)
	}
	term := onTerminal(t, dir, []string{"TERM=dumb"}, "run", runFile)
	if code := term.wait(t); code != 0 {
		t.Fatalf("TERM=dumb: exit %d", code)
	}
	if s := term.screen(); !strings.Contains(s, "  completed  dag/draft/1") || strings.Contains(s, "3/3 done ·") {
		t.Errorf("TERM=dumb: want plain lines, no live view:\n%s", s)
	}
}

// TestStopAsksOnATerminal: stop of a run with work left asks on the
// terminal, says the run cannot be resumed, stops nothing without a yes,
// and stops the run with one.
func TestStopAsksOnATerminal(t *testing.T) {
	t.Parallel()
	dir, runDir, _, cmd := slowRun(t)
	for _, answer := range []string{"n", "y"} {
		term := onTerminal(t, dir, nil, "stop", runDir)
		term.waitScreen(t, 10*time.Second, "the question", func(s string) bool {
			return strings.Contains(s, "Stop run st? 2 of 2 nodes are not done.") && strings.Contains(s, "A stopped run cannot be resumed; `obversa stop --pause ") &&
				strings.Contains(s, "Stop it for good? [y/N]")
		})
		if _, err := term.ptmx.Write([]byte(answer + "\r")); err != nil {
			t.Fatal(err)
		}
		code := term.wait(t)
		switch s := term.screen(); answer {
		case "n":
			if code != exitFailed || !strings.Contains(s, "not stopped") {
				t.Fatalf("answered no: exit %d:\n%s", code, s)
			}
			if st := status(t, runDir); st.Phase != "running" {
				t.Fatalf("answered no, the run is %s", st.Phase)
			}
		case "y":
			if code != 0 || !strings.Contains(s, "records STOPPED") {
				t.Fatalf("answered yes: exit %d:\n%s", code, s)
			}
		}
	}
	if code := exitCode(cmd.Wait()); code != exitFailed {
		t.Fatalf("the stopped run exited %d", code)
	}
	if st := status(t, runDir); st.Phase != "stopped" {
		t.Errorf("phase %s, want stopped", st.Phase)
	}
}
