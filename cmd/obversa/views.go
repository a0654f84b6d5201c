package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/obversa/obversa/host/graph"
	"github.com/obversa/obversa/host/runview"
)

// Human forms of the run views (host/runview) shared by run, resume,
// approve, show and runs.

// duration is an elapsed time for people: "850ms", "12.3s", "4m05s",
// "2h03m".
func duration(ms int64) string {
	d := time.Duration(ms) * time.Millisecond
	switch {
	case d < time.Second:
		return fmt.Sprintf("%dms", ms)
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}

// firstLine is s's first non-empty line, cut to n characters, with "…"
// when anything was left out.
func firstLine(s string, n int) string {
	s = strings.TrimSpace(s)
	line, rest, _ := strings.Cut(s, "\n")
	more := rest != ""
	if r := []rune(line); len(r) > n {
		line, more = string(r[:n]), true
	}
	if more {
		line += "…"
	}
	return line
}

// nodeBrief is a node's result in one line: its text, a command's exit
// status and output, its failure, why it is blocked or what it waits for.
func nodeBrief(n runview.Node, width int) string {
	switch {
	case n.Failure != nil:
		return firstLine(n.Failure.Code+": "+n.Failure.Message, width)
	case n.Blocked != nil:
		return firstLine(n.Blocked.Code+": "+n.Blocked.Message, width)
	case n.Pause != nil && n.Pause.Kind == graph.PauseApproval && n.Approved != "":
		// Decided, not carried on yet: a plain resume does it.
		return n.Approved + " recorded at " + n.Pause.Position + "; obversa resume carries it on"
	case n.Pause != nil:
		return "waits for " + n.Pause.Kind + " at " + n.Pause.Position
	case n.Review != nil:
		return firstLine("verdict "+reviewLine(*n.Review), width)
	case n.Text != "":
		return firstLine(n.Text, width)
	case n.ExitCode != nil:
		s := fmt.Sprintf("exit %d", *n.ExitCode)
		if out := strings.TrimSpace(n.Stdout); out != "" {
			s += " · " + out
		} else if e := strings.TrimSpace(n.Stderr); e != "" {
			s += " · stderr: " + e
		}
		return firstLine(s, width)
	case len(n.Result) > 0:
		return firstLine(string(n.Result), width)
	case len(n.Artifacts) > 0:
		return fmt.Sprintf("result in artifact %s (%d bytes)", n.Artifacts[0].Digest, n.Artifacts[0].Size)
	}
	return ""
}

// printNodeTable prints one line per node: id, status, attempts, elapsed
// time, usage and the brief result; at most limit nodes (0: all), then
// how many were left out.
func printNodeTable(w io.Writer, nodes []runview.Node, limit int, dir string) {
	idw := 4
	ids := make([]string, len(nodes))
	for i, n := range nodes {
		ids[i] = cellText(n.ID)
		idw = max(idw, ansi.StringWidth(ids[i]))
	}
	for i, n := range nodes {
		if limit > 0 && i == limit {
			fmt.Fprintf(w, "  … and %d more nodes: obversa show %s\n", len(nodes)-limit, dir)
			return
		}
		usage := ""
		if n.Usage != nil {
			usage = n.Usage.String()
		}
		line := fmt.Sprintf("  %s  %-10s %-8s %-22s %s", padCell(ids[i], idw), shownStatus(n), elapsedOf(n), usage, nodeBrief(n, 72))
		fmt.Fprintln(w, strings.TrimRight(line, " "))
	}
}

// padCell is s followed by spaces up to width columns as a terminal shows
// them (ansi.StringWidth: a wide character takes two, a combining mark none), so
// that the columns after it line up whatever script s is written in.
func padCell(s string, width int) string {
	return s + strings.Repeat(" ", max(width-ansi.StringWidth(s), 0))
}

// cellText is s as one cell of a table row: escaped as termText escapes
// it, with a line feed or tab shown as \n or \t too, so that an id holding
// a for_each key (any string an upstream result holds) stays on its row,
// and the columns after it line up (widths count the escapes).
func cellText(s string) string {
	s = termText(s)
	if strings.ContainsAny(s, "\n\t") {
		s = strings.NewReplacer("\n", `\n`, "\t", `\t`).Replace(s)
	}
	return s
}

// shownStatus is a node's status in the node table: a loop's review
// member that ran shows what its verdict did to its round, accepted or
// rejected, not "passed" beside a failing verdict.
func shownStatus(n runview.Node) string {
	if r := n.Review; r != nil && n.Status == runview.StatusPassed {
		if r.Accepted {
			return "accepted"
		}
		return "rejected"
	}
	return n.Status
}

// reviewLine says what a review member's verdict was: "fail (round
// rejected): The config has no request timeout."
func reviewLine(r runview.Review) string {
	line := r.Verdict + " (round rejected)"
	if r.Accepted {
		line = r.Verdict + " (accepted)"
	}
	if r.Summary != "" {
		line += ": " + r.Summary
	}
	return line
}

// loopLine says where a loop stands: "config round 2 of 4 (started,
// last review fail)".
func loopLine(l runview.Loop) string {
	state := l.Status
	if l.LastReview != "" {
		state += ", last review " + l.LastReview
	}
	if l.Code != "" {
		state += ", " + l.Code
	}
	return fmt.Sprintf("%s round %d of %d (%s)", l.Loop, l.Round, l.MaxRounds, state)
}

// forEachLine says where a for_each node stands: "lint 500 instances,
// 237 passed, 0 failed, 8 running (started)".
func forEachLine(f runview.ForEach) string {
	switch {
	case f.Code != "":
		return fmt.Sprintf("%s no instances: %s (%s)", f.Node, f.Code, f.Status)
	case !f.Expanded:
		return fmt.Sprintf("%s instances not decided yet (%s)", f.Node, f.Status)
	}
	return fmt.Sprintf("%s %d instances, %d passed, %d failed, %d running (%s)", f.Node, f.Instances, f.Passed, f.Failed, f.Running, f.Status)
}

// printGroups prints a line per loop and for_each node.
func printGroups(w io.Writer, loops []runview.Loop, each []runview.ForEach) {
	for _, l := range loops {
		fmt.Fprintf(w, "loop:     %s\n", loopLine(l))
	}
	for _, f := range each {
		fmt.Fprintf(w, "for_each: %s\n", forEachLine(f))
	}
}

func elapsedOf(n runview.Node) string {
	if n.StartedAt == nil {
		return ""
	}
	return duration(n.ElapsedMS)
}
