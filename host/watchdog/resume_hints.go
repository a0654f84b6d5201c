package watchdog

import (
	"fmt"
	"strings"

	"github.com/obversa/obversa/host/graph"
	"github.com/obversa/obversa/host/runstate"
)

// answerHints names, for each paused position, the command that answers
// it: approve for an approval, resume --reconciled for an attempt whose
// effect is uncertain, resume --position for any other pause.
func answerHints(rs *runstate.State, run string) string {
	var hints []string
	for _, n := range rs.Graph().Nodes() {
		if n.Status != graph.StatusPaused {
			continue
		}
		switch {
		case n.Pause != nil && n.Pause.Kind == graph.PauseApproval:
			hints = append(hints, fmt.Sprintf("decide %s with `obversa approve %s %s`", n.Position, run, n.Position))
		case n.Pause != nil && n.Pause.Kind == graph.PauseReconcile:
			hints = append(hints, fmt.Sprintf("say whether attempt %s of %s took effect with `obversa resume %s --position %s --reconciled=done|not-done`", n.Pause.AttemptID, n.Position, run, n.Position))
		default:
			hints = append(hints, fmt.Sprintf("offer %s again with `obversa resume %s --position %s`", n.Position, run, n.Position))
		}
	}
	return strings.Join(hints, "; ")
}
