package runview

import (
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/obversa/obversa/host/graph"
	"github.com/obversa/obversa/host/runstate"
	"github.com/obversa/obversa/host/stream"
	"github.com/obversa/obversa/store"
)

// Notice kinds: what a live view keeps on screen once it happened.
const (
	NoticeFailed  = "failed"  // a node failed for good
	NoticeRetry   = "retry"   // an attempt failed and the node is offered again
	NoticePaused  = "paused"  // a position waits for a person
	NoticeCrashed = "crashed" // the worker died; the watchdog restarts it
	NoticeReview  = "review"  // a loop's review failed: the loop goes round again
)

// Notice is one failure or pause a live view keeps on screen, with its
// code and cause.
type Notice struct {
	Kind     string `json:"kind"`
	Node     string `json:"node,omitempty"`
	Position string `json:"position,omitempty"`
	// Code is the failure code, or for a pause what it waits for
	// (approval, reconcile-attempt).
	Code    string `json:"code,omitempty"`
	Message string `json:"message,omitempty"`
}

// Attempt is an attempt in flight.
type Attempt struct {
	// Node is the unit's name (Node.ID).
	Node     string `json:"node"`
	Position string `json:"position"`
	// Status is the position's status as status and show give it
	// (NodeStatus): started, dispatched (its attempt has not started),
	// or, while nothing carries the run on (runstate.State.Halted),
	// interrupted for a started one — cut off, its clock stopped. It runs
	// now when it is started: a halted run's are interrupted.
	Status string `json:"status"`
	// ElapsedMS runs from the attempt's start to now, or to when the run
	// was last carried on for a halted run; 0 before it started.
	ElapsedMS int64 `json:"elapsed_ms"`
	// Last is the last line of text the attempt streamed, "" for none.
	Last string `json:"last,omitempty"`
}

// Progress is what a live view shows at one moment.
type Progress struct {
	Summary  Summary   `json:"summary"`
	InFlight []Attempt `json:"in_flight"`
	// Notices are the failures, retries, pauses and crashes so far, in
	// record order.
	Notices []Notice         `json:"notices"`
	Result  *runstate.Result `json:"result,omitempty"`
}

// Live follows a run for a live view: recorded events go through the
// shared fold (Apply), streamed lines through stream.Lines (Stream). It is
// not safe for concurrent use.
type Live struct {
	st      *runstate.State
	dir     string
	lines   stream.Lines
	notices []Notice
}

// NewLive starts a live view of the run whose record st has folded so
// far (runstate.Load); dir is its directory.
func NewLive(st *runstate.State, dir string) *Live { return &Live{st: st, dir: dir} }

// State returns the fold the view reads.
func (l *Live) State() *runstate.State { return l.st }

// Apply folds one recorded event (the events after the fold's revision,
// in order) and returns the notices it adds. Events at or below the
// fold's revision are ignored, so a follower may start anywhere before.
// Errors are the fold's.
func (l *Live) Apply(e store.Event) ([]Notice, error) {
	if e.Rev <= l.st.Rev() {
		return nil, nil
	}
	if err := l.st.Apply(e); err != nil {
		return nil, err
	}
	var add []Notice
	switch e.Type {
	case graph.EventNodeFailed:
		var d graph.FailedData
		if json.Unmarshal(e.Data, &d) == nil {
			kind, name := NoticeRetry, d.Node
			n := l.st.Graph().AtPosition(d.Position)
			if n != nil {
				name = n.Name()
				if n.Status == graph.StatusFailed {
					kind = NoticeFailed
				}
			}
			if n == nil || !n.VerdictFailure { // a binding reviewer's verdict is told by its review
				add = append(add, Notice{Kind: kind, Node: name, Position: d.Position, Code: d.Code, Message: d.Message})
			}
		}
	case graph.EventLoopReviewed:
		var d graph.ReviewedData
		if json.Unmarshal(e.Data, &d) == nil && !d.Accepted {
			add = append(add, Notice{Kind: NoticeReview, Node: fmt.Sprintf("%s/%d/%s", d.Loop, d.Round, d.Member), Position: d.Position,
				Code: d.Outcome.Status, Message: d.Outcome.Summary})
		}
	case graph.EventLoopFinished:
		var d graph.LoopFinishedData
		if json.Unmarshal(e.Data, &d) == nil && d.Code != "" {
			add = append(add, Notice{Kind: NoticeFailed, Node: d.Loop, Position: d.Position, Code: d.Code, Message: d.Message})
		}
	case graph.EventNodeExpanded:
		var d graph.ExpandedData
		if json.Unmarshal(e.Data, &d) == nil && d.Code != "" {
			add = append(add, Notice{Kind: NoticeFailed, Node: d.Node, Code: d.Code, Message: d.Message})
		}
	case graph.EventNodePaused:
		var d graph.PausedData
		if json.Unmarshal(e.Data, &d) == nil {
			add = append(add, Notice{Kind: NoticePaused, Node: d.Node, Position: d.Position, Code: d.Request.Kind, Message: pauseCause(d.Request)})
		}
	case runstate.EventWorkerExited:
		var d runstate.WorkerExitedData
		if json.Unmarshal(e.Data, &d) == nil {
			n := Notice{Kind: NoticeCrashed, Code: "WORKER_EXITED",
				Message: fmt.Sprintf("worker pid %d %s; restart %d", d.PID, d.Cause(), d.Restart+1)}
			if d.Code != "" {
				n.Code = d.Code
			}
			add = append(add, n)
		}
	case graph.EventRunWaiting:
		if r := l.st.Paused(); r != nil && r.Code != "" && (r.Output == nil || len(r.Output.Paused) == 0) {
			msg := ""
			if r.Output != nil {
				msg = r.Output.Message
			}
			add = append(add, Notice{Kind: NoticePaused, Code: r.Code, Message: msg})
		}
	}
	l.notices = append(l.notices, add...)
	return add, nil
}

// pauseCause says what a paused position waits for, for people.
func pauseCause(p graph.PauseRequest) string {
	switch p.Kind {
	case graph.PauseApproval:
		return "waits for obversa approve"
	case graph.PauseReconcile:
		// A reason names what cut the attempt off (a timeout, the crash
		// of the worker running it); a record written before crashes
		// were given one holds none.
		cause := "a crash cut it off"
		if p.Reason != "" {
			cause = p.Reason
		}
		return fmt.Sprintf("attempt %s is uncertain (%s): say whether it took effect", p.AttemptID, cause)
	}
	return "waits for " + p.Kind
}

// Stream takes one line of stream.jsonl and returns the lines it
// completes for people.
func (l *Live) Stream(line stream.Line) []stream.Shown { return l.lines.Add(line) }

// Snapshot is the view at time now; held says whether a live watchdog
// holds the run (true for the watchdog's own view).
func (l *Live) Snapshot(now time.Time, held bool) Progress {
	p := Progress{Summary: Summarize(l.st, l.dir, now, held), InFlight: []Attempt{},
		Notices: append([]Notice{}, l.notices...), Result: l.st.Result()}
	end := clockEnd(l.st, now, held)
	for _, n := range l.st.Graph().Nodes() {
		if n.Status != graph.StatusStarted && n.Status != graph.StatusDispatched {
			continue
		}
		a := Attempt{Node: n.Name(), Position: n.Position, Status: NodeStatus(l.st, n, held), Last: l.lines.Last(n.Position)}
		if pos := l.st.Position(n.Position); pos != nil && !pos.StartedAt.IsZero() {
			a.ElapsedMS = end.Sub(pos.StartedAt).Milliseconds()
		}
		p.InFlight = append(p.InFlight, a)
	}
	sort.SliceStable(p.InFlight, func(i, j int) bool { return p.InFlight[i].ElapsedMS > p.InFlight[j].ElapsedMS })
	return p
}
