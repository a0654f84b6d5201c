package runstate

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/obversa/obversa/host/graph"
	"github.com/obversa/obversa/internal/proc"
)

// TestCompactResultIsRestored: a result recorded compacted (its graph
// members left in the record) folds into the same result as the whole
// one, for each kind of outcome the graph reaches.
func TestCompactResultIsRestored(t *testing.T) {
	ref := &graph.ArtifactRef{Digest: "sha256:" + fmt.Sprintf("%064x", 1), Size: 70000, MediaType: "application/json", Purpose: "node-result"}
	dispatch := func(node string) []any {
		pos := "dag/" + node + "/1"
		return []any{
			graph.EventNodeDispatched, graph.DispatchedData{Dispatches: []graph.Dispatch{{Node: node, Position: pos}}},
			graph.EventAttemptStarted, graph.AttemptStartedData{Node: node, Position: pos, AttemptID: node},
		}
	}
	tests := []struct {
		name   string
		typ    string
		events []any
	}{
		{"complete, one result kept as an artifact", graph.EventRunFinished, append(append(dispatch("a"),
			graph.EventNodeCompleted, graph.CompletedData{Node: "a", Position: "dag/a/1", ResultArtifact: ref}),
			graph.EventNodeDispatched, graph.DispatchedData{Dispatches: []graph.Dispatch{{Node: "b", Position: "dag/b/1"}}},
			graph.EventNodePaused, graph.PausedData{Node: "b", Position: "dag/b/1", Request: graph.PauseRequest{Kind: graph.PauseApproval, Position: "dag/b/1"}},
			graph.EventApproval, graph.ApprovalData{Position: "dag/b/1", Decision: graph.DecisionAllow},
			graph.EventNodeResumed, graph.ResumedData{Node: "b", Position: "dag/b/1", Reason: graph.ResumedOperator},
			graph.EventAttemptStarted, graph.AttemptStartedData{Node: "b", Position: "dag/b/1", AttemptID: "b"},
			graph.EventNodeCompleted, graph.CompletedData{Node: "b", Position: "dag/b/1", Result: json.RawMessage(`{"n":1}`)})},
		{"fail, b blocked", graph.EventRunFinished, append(dispatch("a"),
			graph.EventNodeFailed, graph.FailedData{Node: "a", Position: "dag/a/1", Code: "NODE_FAILED", Message: "no"})},
		{"paused", graph.EventRunWaiting, append(append(dispatch("a"),
			graph.EventNodeCompleted, graph.CompletedData{Node: "a", Position: "dag/a/1", Result: json.RawMessage(`"x"`)}),
			graph.EventNodeDispatched, graph.DispatchedData{Dispatches: []graph.Dispatch{{Node: "b", Position: "dag/b/1"}}},
			graph.EventNodePaused, graph.PausedData{Node: "b", Position: "dag/b/1", Request: graph.PauseRequest{Kind: graph.PauseApproval, Position: "dag/b/1"}})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prefix := append([]any{graph.EventRunStarted, started(t)}, tt.events...)
			s, err := record(t, prefix...)
			if err != nil {
				t.Fatal(err)
			}
			out := s.Graph().Decide().Outcome
			if out == nil {
				t.Fatal("the graph has no outcome")
			}
			whole := OutcomeResult("r", s.Graph(), out)
			compact := whole.Compact()
			b := mustJSON(compact)
			if want := `"from_record":true`; !json.Valid(b) || !strings.Contains(string(b), want) {
				t.Fatalf("compact result %s lacks %s", b, want)
			}
			for _, m := range []string{`"nodes":`, `"paused":`, `"failed":`, `"errors":`, `"passed":`} {
				if strings.Contains(string(b), m) {
					t.Fatalf("compact result %s still holds %s", b, m)
				}
			}
			got, err := record(t, append(prefix, tt.typ, json.RawMessage(b))...)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(whole, got.Result()); diff != "" {
				t.Errorf("folded result (-whole +got):\n%s", diff)
			}
		})
	}
}

// TestNewCleanupIsBounded: run:cleanup names at most MaxCleanupListed
// processes per list and counts the rest, so a run that left thousands of
// processes still records its cleanup.
func TestNewCleanupIsBounded(t *testing.T) {
	procs := func(n int) []proc.Proc {
		out := make([]proc.Proc, n)
		for i := range out {
			out[i] = proc.Proc{PID: i + 1, StartTime: uint64(i)}
		}
		return out
	}
	tests := []struct {
		stopped, left int
		unlisted      int
	}{
		{0, 0, 0}, {3, 0, 0}, {MaxCleanupListed, 1, 0}, {5000, 0, 5000 - MaxCleanupListed}, {100, 70, 100 + 70 - 2*MaxCleanupListed},
	}
	for _, tt := range tests {
		d := NewCleanup(procs(tt.stopped), procs(tt.left))
		if len(d.Stopped) != min(tt.stopped, MaxCleanupListed) || len(d.Survivors) != min(tt.left, MaxCleanupListed) ||
			d.Unlisted != tt.unlisted || d.Verified != (tt.left == 0) || d.Stopped == nil || d.Survivors == nil {
			t.Errorf("NewCleanup(%d, %d) = %d stopped, %d survivors, %d unlisted, verified %v", tt.stopped, tt.left,
				len(d.Stopped), len(d.Survivors), d.Unlisted, d.Verified)
		}
	}
}
