package runview

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/obversa/obversa/host/runstate"
)

// PhaseInterrupted is the phase of a run with no result that no live
// watchdog holds: its watchdog was killed, and `obversa resume` takes it
// over. The other phases are the record's (runstate.Phase).
const PhaseInterrupted = "interrupted"

// Phases are the phases a reader shows, in the order filters list them
// (`obversa runs --phase`, the run browser).
var Phases = []string{string(runstate.PhaseStarting), string(runstate.PhaseRunning), string(runstate.PhaseRecovering),
	string(runstate.PhasePaused), string(runstate.PhaseCompleted), string(runstate.PhaseFailed), string(runstate.PhaseStopped),
	PhaseInterrupted}

// ErrUnknownPhase is returned for a phase filter that names no phase
// (CheckPhases).
var ErrUnknownPhase = errors.New("not a phase")

// CheckPhases returns nil when every one of phases is one of Phases, else
// ErrUnknownPhase wrapped in the message `obversa runs --phase` and the
// run browser's GET /api/runs?phase= both give: the phase (as quoted by
// quote), the valid phases and the closest one.
func CheckPhases(phases []string, quote func(string) string) error {
	for _, p := range phases {
		if !slices.Contains(Phases, p) {
			return fmt.Errorf("%s is %w; use one of %v%s", quote(p), ErrUnknownPhase, Phases, DidYouMean(Closest(p, Phases)))
		}
	}
	return nil
}

// Phase is the phase a reader shows: the record's, except that a run with
// no result whose lock no live watchdog holds (held is false: what the
// reader found) is interrupted (docs/decisions.md, "Processes"). That
// holds for a starting run too: the watchdog takes the run's ownership
// before it records graph:run-started, so a starting run nothing holds
// lost its watchdog before any worker recorded its start, and only
// `obversa resume` carries it on.
func Phase(st *runstate.State, held bool) string {
	if st.Result() == nil && !held {
		return PhaseInterrupted
	}
	return string(st.Phase())
}

// Counts are a run's nodes by where they stand: a for_each node and a
// loop count once each, by their status over their units (Groups says
// how their instances and rounds stand).
type Counts struct {
	// Total is the number of nodes in the graph.
	Total int `json:"total"`
	// Done counts the nodes that will not run again: passed, failed for
	// good, blocked by a failed dependency, skipped by the run's end, or
	// stopped by it while they waited for reconciliation.
	Done    int `json:"done"`
	Passed  int `json:"passed"`
	Failed  int `json:"failed"`
	Blocked int `json:"blocked"`
	Skipped int `json:"skipped"`
	// Running counts nodes with a recorded position and no result while
	// something carries the run on (runstate.State.Halted).
	Running int `json:"running"`
	// Interrupted counts nodes whose attempt the run left started when
	// it stopped being carried on (StatusInterrupted).
	Interrupted int `json:"interrupted"`
	Paused      int `json:"paused"`
	// Stopped counts nodes the run's end left waiting for reconciliation
	// (StatusStopped).
	Stopped int `json:"stopped"`
}

// CountNodes counts the nodes of a fold, the run's end applied
// (VertexStatus); held says whether a live process holds the run, as the
// reader found it.
func CountNodes(st *runstate.State, held bool) Counts {
	var c Counts
	// Nothing runs while nothing carries the run on: a position
	// dispatched and never started waits for it, as an idle node does.
	_, halted := st.Halted(held)
	for _, v := range st.Graph().Vertices() {
		c.Total++
		switch VertexStatus(st, v, held) {
		case StatusPassed:
			c.Passed++
		case StatusFailed:
			c.Failed++
		case StatusBlocked:
			c.Blocked++
		case StatusSkipped:
			c.Skipped++
		case StatusPaused:
			c.Paused++
		case StatusStopped:
			c.Stopped++
		case StatusDispatched, StatusStarted:
			if !halted {
				c.Running++
			}
		case StatusInterrupted:
			c.Interrupted++
		}
	}
	c.Done = c.Passed + c.Failed + c.Blocked + c.Skipped + c.Stopped
	return c
}

// Summary is one run as `obversa runs` lists it.
type Summary struct {
	RunID string `json:"run_id"`
	// Name is what commands and the web UI take as RUN for it, as its
	// storage lists it: in a storage directory its directory's name, so a
	// copy of a run directory (which holds the copied run's record, and
	// so its RunID) is named by its own directory; in a database, the
	// run id.
	Name string `json:"name"`
	// Dir is the run's directory, what every command takes as RUN.
	Dir   string `json:"dir"`
	Graph string `json:"graph"`
	Phase string `json:"phase"`
	// StartedAt is when graph:run-started was recorded.
	StartedAt time.Time `json:"started_at"`
	// ElapsedMS runs from the start to the result, or to now while the
	// run has none and is carried on; a paused or interrupted run's stops
	// at its last event.
	ElapsedMS int64  `json:"elapsed_ms"`
	Nodes     Counts `json:"nodes"`
	// Loops and ForEach are where the graph's loops and for_each nodes
	// stand; absent when it has none.
	Loops   []Loop    `json:"loops,omitempty"`
	ForEach []ForEach `json:"for_each,omitempty"`
	// Usage sums every engine call of the run; unknown when any call did
	// not report usage.
	Usage Usage `json:"usage"`
	// Code is the result's code ("" while running, or when complete).
	Code string `json:"code,omitempty"`
}

// Summarize is the Summary of a folded record at time now; held says
// whether a live process holds the run, as the reader found it.
func Summarize(st *runstate.State, dir string, now time.Time, held bool) Summary {
	rs := st.Start()
	s := Summary{RunID: rs.RunID, Dir: dir, Graph: rs.Definition.Name, Phase: Phase(st, held),
		StartedAt: rs.StartedAt, Nodes: CountNodes(st, held), Usage: Total(st)}
	if st.Finished() != nil {
		now = st.FinishedAt()
	}
	// A run nothing carries on (paused, interrupted) stopped its clock
	// when it was last carried on.
	s.ElapsedMS = clockEnd(st, now, held).Sub(rs.StartedAt).Milliseconds()
	if loops, each := Groups(st, held); len(loops)+len(each) > 0 {
		s.Loops, s.ForEach = loops, each
	}
	if r := st.Result(); r != nil {
		s.Code = r.Code
	}
	return s
}

// Total sums the usage of every engine call the fold knows, unknown once
// any is unknown; a run with no engine call has a known zero.
func Total(st *runstate.State) Usage {
	t := Usage{}
	t.Known = true
	for _, u := range st.Usage() {
		t.Usage = runstate.SumUsage(t.Usage, u.Usage)
	}
	return t
}

// Folder folds run id's record read-only (the shared fold) and returns it
// with the run's name — as a person types it after a command: a run
// directory, or an id with the storage flags — and whether a live owner
// holds the run. name is set on an error too.
type Folder func(ctx context.Context, id string) (st *runstate.State, name string, live bool, err error)

// List returns the summaries of the runs ids of one namespace, folded by
// fold, newest first, keeping those whose phase keep accepts (nil keeps
// all). A run whose record cannot be read is listed with its error in
// Broken rather than failing the list.
func List(ctx context.Context, ids []string, fold Folder, now time.Time, keep func(Summary) bool) ([]Summary, []Broken) {
	var out []Summary
	var broken []Broken
	for _, id := range ids {
		st, name, live, err := fold(ctx, id)
		if err != nil {
			broken = append(broken, Broken{RunID: id, Dir: name, Error: err.Error()})
			continue
		}
		s := Summarize(st, name, now, live)
		s.Name = id
		if keep == nil || keep(s) {
			out = append(out, s)
		}
	}
	slices.SortStableFunc(out, func(a, b Summary) int {
		if c := b.StartedAt.Compare(a.StartedAt); c != 0 {
			return c
		}
		return strings.Compare(b.RunID, a.RunID)
	})
	return out, broken
}

// Broken is a run List could not read.
type Broken struct {
	RunID string `json:"run_id"`
	Dir   string `json:"dir"`
	Error string `json:"error"`
}
