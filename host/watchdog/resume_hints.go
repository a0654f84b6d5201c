package watchdog

import (
	"fmt"
	"strings"

	"github.com/obversa/obversa/host/graph"
	"github.com/obversa/obversa/host/runstate"
	"github.com/obversa/obversa/internal/shellquote"
)

// answerHints names, for each paused position, the command that answers
// it: approve for an approval, resume --reconciled for an attempt whose
// effect is uncertain, resume --position for any other pause.
func answerHints(rs *runstate.State, run string) string {
	return AnswerHints(pausedRequests(rs), run)
}

// operatorPauseDetail is the recorded message of an operator's pause
// (detail says who paused it) with the next step: the command that
// answers each position still waiting for a person when there are any
// (a plain resume refuses while one waits), else a plain resume.
func (s *supervisor) operatorPauseDetail(detail string) string {
	if hints := answerHints(s.rs, s.ref.Shell()); hints != "" {
		return fmt.Sprintf("%s; positions wait for a person: %s", detail, hints)
	}
	return fmt.Sprintf("%s; carry it on with obversa resume %s", detail, s.ref.Shell())
}

// AnswerHints names, for each paused position of reqs, the command that
// answers it (run is the run as a shell command names it, Ref.Shell;
// each position is quoted for the shell too): approve for
// an approval, resume --reconciled for an attempt whose effect is
// uncertain, resume --position for any other pause. Requests without a
// position (a pause of the whole run) are left out.
func AnswerHints(reqs []graph.PauseRequest, run string) string {
	var hints []string
	for _, p := range reqs {
		pos := shellquote.Quote(p.Position)
		switch {
		case p.Position == "":
		case p.Kind == graph.PauseApproval:
			hints = append(hints, fmt.Sprintf("decide %s with `obversa approve %s %s`", p.Position, run, pos))
		case p.Kind == graph.PauseReconcile:
			hints = append(hints, fmt.Sprintf("say whether attempt %s of %s took effect with `obversa resume %s --position %s --reconciled=done|not-done [--result JSON]`", p.AttemptID, p.Position, run, pos))
		default:
			hints = append(hints, fmt.Sprintf("offer %s again with `obversa resume %s --position %s`", p.Position, run, pos))
		}
	}
	return strings.Join(hints, "; ")
}

// pausedRequests returns what each paused position of rs waits for, in
// the order of PausedPositions.
func pausedRequests(rs *runstate.State) []graph.PauseRequest {
	if rs.Graph().Paused() == 0 {
		return nil
	}
	var out []graph.PauseRequest
	for _, n := range rs.Graph().Nodes() {
		if n.Status != graph.StatusPaused {
			continue
		}
		p := graph.PauseRequest{Position: n.Position}
		if n.Pause != nil {
			p = *n.Pause
			p.Position = n.Position
		}
		out = append(out, p)
	}
	return out
}

// decided maps each approval position of reqs that st holds a decision
// for, and that is still paused there, to the decision; nil for none.
func decided(st *runstate.State, reqs []graph.PauseRequest) map[string]string {
	var out map[string]string
	for _, p := range reqs {
		if p.Kind != graph.PauseApproval || p.Position == "" {
			continue
		}
		if n := st.Graph().AtPosition(p.Position); n != nil && n.Status == graph.StatusPaused && n.Approved != "" {
			if out == nil {
				out = map[string]string{}
			}
			out[p.Position] = n.Approved
		}
	}
	return out
}
