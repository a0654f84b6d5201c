package main

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/obversa/obversa/host/graph"
)

// readable describes a loop or for_each event in words for `obversa
// events` (docs/decisions.md, "Loops and for_each in the record"); ok is
// false for any other event, which prints as its data.
func readable(typ string, data json.RawMessage) (string, bool) {
	if typ != graph.EventNodeExpanded && !strings.HasPrefix(typ, "graph:loop-") {
		return "", false
	}
	v, known, err := graph.Decode(typ, data)
	if err != nil || !known {
		return "", false
	}
	switch d := v.(type) {
	case graph.ExpandedData:
		if d.Code != "" {
			return fmt.Sprintf("%s: no instances: %s %s", d.Node, d.Code, d.Message), true
		}
		return fmt.Sprintf("%s: %d instances%s", d.Node, len(d.Keys), keyList(d.Keys)), true
	case graph.LoopStartedData:
		return fmt.Sprintf("%s: starts, at most %d rounds", d.Loop, d.MaxRounds), true
	case graph.RoundStartedData:
		return fmt.Sprintf("%s: round %d", d.Loop, d.Round), true
	case graph.ConditionData:
		if d.Error != "" {
			return fmt.Sprintf("%s round %d: %s did not render: %s", d.Loop, d.Round, d.Which, d.Error), true
		}
		return fmt.Sprintf("%s round %d: %s met=%v (%s)", d.Loop, d.Round, d.Which, d.Met, d.Reason), true
	case graph.ReviewedData:
		s := fmt.Sprintf("%s round %d: %s says %s", d.Loop, d.Round, d.Member, d.Outcome.Status)
		if d.Outcome.Summary != "" {
			s += " — " + d.Outcome.Summary
		}
		if r := d.Outcome.Revision; r != nil {
			for _, f := range r.Findings {
				s += fmt.Sprintf("; [%s] %s", f.Reviewer, oneLine(f.Evidence))
			}
		}
		if d.Accepted {
			return s + " (accepted)", true
		}
		return s + " (revise)", true
	case graph.LoopFinishedData:
		if d.Outcome == graph.LoopPassed {
			return fmt.Sprintf("%s: passed in round %d", d.Loop, d.Rounds), true
		}
		return fmt.Sprintf("%s: failed %s after %d rounds: %s", d.Loop, d.Code, d.Rounds, d.Message), true
	}
	return "", false
}

// keyList shows the first keys of an expansion.
func keyList(keys []string) string {
	const show = 5
	if len(keys) == 0 {
		return ""
	}
	q := make([]string, 0, show)
	for _, k := range keys[:min(show, len(keys))] {
		q = append(q, fmt.Sprintf("%q", k))
	}
	if len(keys) > show {
		q = append(q, fmt.Sprintf("… %d more", len(keys)-show))
	}
	return " (" + strings.Join(q, ", ") + ")"
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
