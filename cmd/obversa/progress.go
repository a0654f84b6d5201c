package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/obversa/obversa/host/graph"
	"github.com/obversa/obversa/host/runstate"
	"github.com/obversa/obversa/store"
)

func isTerminal(f interface{ Fd() uintptr }) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// progressPrinter returns a Progress callback printing one line per event
// that matters to a person watching the run.
func progressPrinter(w io.Writer) func(store.Event) {
	return func(e store.Event) {
		if line := progressLine(e); line != "" {
			fmt.Fprintln(w, line)
		}
	}
}

func progressLine(e store.Event) string {
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
		return fmt.Sprintf("  paused     %s: waits for %s", d.Position, d.Request.Kind)
	case graph.EventNodeResumed:
		return "  resumed    " + d.Position
	case runstate.EventWorkerExited:
		return fmt.Sprintf("  worker crashed (exit %d %s); restart %d", d.ExitCode, d.Signal, d.Restart+1)
	}
	return ""
}
