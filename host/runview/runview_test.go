package runview

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/obversa/obversa/host/graph"
	"github.com/obversa/obversa/host/plan"
	"github.com/obversa/obversa/host/runstate"
	"github.com/obversa/obversa/host/stream"
	"github.com/obversa/obversa/plugin"
	"github.com/obversa/obversa/store"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// fold folds a run of three nodes — "a" an engine node, "b" a binding
// depending on "a", "c" an engine node waiting for approval — and then
// the given events (type, data), one second apart.
func fold(t *testing.T, events ...any) *runstate.State {
	t.Helper()
	return foldDef(t, &graph.Definition{Name: "dag", GlobalConcurrency: 3, RetryCapPerNode: 1, KeyedConcurrency: []graph.KeyLimit{}, Nodes: []graph.NodeDef{
		{ID: "a", Kind: graph.KindRequired, Lane: "w", Prompt: "p", DependsOn: []string{}},
		{ID: "b", Kind: graph.KindRequired, Binding: "shell", DependsOn: []string{"a"}},
		{ID: "c", Kind: graph.KindRequired, Lane: "w", Prompt: "q", DependsOn: []string{}, Approval: true},
	}}, events...)
}

// foldDef folds a run of def and then the given events, as fold does.
func foldDef(t *testing.T, def *graph.Definition, events ...any) *runstate.State {
	t.Helper()
	target := plugin.Identity{Adapter: "mock", Provider: "local", ModelFamily: "scripted", Model: "m1", Tools: []string{}}
	p := &plan.Plan{RunID: "r", Namespace: "default", Restart: plan.Restart{MaxRestarts: 1, InitialBackoffMS: 1, MaxBackoffMS: 1},
		Limits: plan.Limits{TimeoutMS: 60000}, Plugins: []plan.PluginPlan{}, Lanes: []plan.LanePlan{{Name: "w", Requested: target, Effective: target,
			KnownSubstitutions: []plugin.Identity{}, Fallbacks: []plugin.Identity{}}}}
	rs, err := plan.NewRunStarted("run.hcl", def, p, t0)
	if err != nil {
		t.Fatal(err)
	}
	st := runstate.New()
	all := append([]any{graph.EventRunStarted, rs}, events...)
	for i := 0; i+1 < len(all); i += 2 {
		b, err := json.Marshal(all[i+1])
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Apply(store.Event{Rev: int64(i/2 + 1), Type: all[i].(string), Data: b, TS: t0.Add(time.Duration(i/2) * time.Second)}); err != nil {
			t.Fatal(err)
		}
	}
	return st
}

func TestSummaryNodesAndSuggestions(t *testing.T) {
	t.Parallel()
	usage := json.RawMessage(`{"known":true,"input":3,"output":4}`)
	st := fold(t,
		graph.EventNodeDispatched, graph.DispatchedData{Dispatches: []graph.Dispatch{{Node: "a", Position: "dag/a/1"}, {Node: "c", Position: "dag/c/1"}}},
		graph.EventNodePaused, graph.PausedData{Node: "c", Position: "dag/c/1", Request: graph.PauseRequest{Kind: graph.PauseApproval, Position: "dag/c/1"}},
		graph.EventAttemptStarted, graph.AttemptStartedData{Node: "a", Position: "dag/a/1", AttemptID: "x"},
		graph.EventEngineAttempt, graph.EngineAttemptData{Node: "a", Position: "dag/a/1", Sequence: 1, Outcome: "completed", Usage: usage},
		graph.EventNodeCompleted, graph.CompletedData{Node: "a", Position: "dag/a/1", Result: json.RawMessage(`"line one\nline two"`)},
		graph.EventNodeDispatched, graph.DispatchedData{Dispatches: []graph.Dispatch{{Node: "b", Position: "dag/b/1"}}},
		graph.EventAttemptStarted, graph.AttemptStartedData{Node: "b", Position: "dag/b/1", AttemptID: "y"},
	)
	now := t0.Add(time.Minute)
	s := Summarize(st, "/runs/r", now, true)
	want := Counts{Total: 3, Done: 1, Passed: 1, Running: 1, Paused: 1}
	if diff := cmp.Diff(want, s.Nodes); diff != "" {
		t.Errorf("counts (-want +got):\n%s", diff)
	}
	if s.Phase != "starting" || s.ElapsedMS != 60000 || !s.Usage.Known || s.Usage.Input != 3 {
		t.Errorf("summary %+v", s)
	}
	if got := Summarize(st, "/runs/r", now, false).Phase; got != PhaseInterrupted {
		t.Errorf("a run no worker started that nothing holds is %s, want interrupted: its watchdog was created before it", got)
	}
	a, _ := NodeOf(st, "a", now, true)
	if a.Text != "line one\nline two" || a.Status != StatusPassed || a.ElapsedMS != 2000 || len(a.Calls) != 1 || a.Usage.String() != "in 3 · out 4" {
		t.Errorf("node a %+v", a)
	}
	b, _ := NodeOf(st, "b", now, true)
	b.SetResult(json.RawMessage(`{"exit_code":2,"stdout":"1\n2\n3\n","stderr":"bad\n"}`))
	if *b.ExitCode != 2 || b.Stdout != "1\n2\n3" || b.Stderr != "bad" {
		t.Errorf("node b %+v", b)
	}
	tests := []struct{ given, position, node string }{
		{"dag/c/2", "dag/c/1", "c"},
		{"c", "dag/c/1", "c"},
		{"dag/x/1", "dag/a/1", "a"},
		{"elsewhere", "", ""},
	}
	for _, tt := range tests {
		if got := SuggestPosition(st, tt.given); got != tt.position {
			t.Errorf("SuggestPosition(%q) = %q, want %q", tt.given, got, tt.position)
		}
		if got := SuggestNode(st, tt.given); tt.node != "" && got != tt.node {
			t.Errorf("SuggestNode(%q) = %q, want %q", tt.given, got, tt.node)
		}
	}
	if u, _ := json.Marshal(Usage{}); string(u) != `"unknown"` {
		t.Errorf("unknown usage marshals as %s", u)
	}
}

func TestLiveNotices(t *testing.T) {
	t.Parallel()
	st := fold(t)
	l := NewLive(st, "/runs/r")
	apply := func(rev int64, typ string, v any) []Notice {
		b, _ := json.Marshal(v)
		n, err := l.Apply(store.Event{Rev: rev, Type: typ, Data: b, TS: t0.Add(time.Duration(rev) * time.Second)})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	apply(2, graph.EventNodeDispatched, graph.DispatchedData{Dispatches: []graph.Dispatch{{Node: "a", Position: "dag/a/1"}, {Node: "c", Position: "dag/c/1"}}})
	apply(3, graph.EventAttemptStarted, graph.AttemptStartedData{Node: "a", Position: "dag/a/1", AttemptID: "x"})
	got := apply(4, graph.EventNodePaused, graph.PausedData{Node: "c", Position: "dag/c/1", Request: graph.PauseRequest{Kind: graph.PauseApproval, Position: "dag/c/1"}})
	if len(got) != 1 || got[0].Kind != NoticePaused || got[0].Code != graph.PauseApproval {
		t.Errorf("pause notices %+v", got)
	}
	if again := apply(4, graph.EventNodePaused, graph.PausedData{}); again != nil {
		t.Errorf("an event at the fold's revision is folded again: %+v", again)
	}
	l.Stream(stubLine("dag/a/1", "thinking\nalmost there"))
	p := l.Snapshot(t0.Add(10*time.Second), true)
	if len(p.InFlight) != 1 || p.InFlight[0].Position != "dag/a/1" || p.InFlight[0].Last != "almost there" || p.InFlight[0].ElapsedMS != 7000 {
		t.Errorf("in flight %+v", p.InFlight)
	}
	got = apply(5, graph.EventNodeFailed, graph.FailedData{Node: "a", Position: "dag/a/1", Code: "NODE_FAILED", Message: "boom"})
	if len(got) != 1 || got[0].Kind != NoticeRetry || got[0].Message != "boom" {
		t.Errorf("a failure with a retry left: %+v", got)
	}
	if n := l.Snapshot(t0, true).Notices; len(n) != 2 {
		t.Errorf("notices kept %+v", n)
	}
}

func stubLine(position, text string) stream.Line {
	return stream.Line{Node: "a", Position: position, Call: 1, Kind: stream.KindText, Text: text}
}

// TestAbortedOnlyOnceEnded: a unit whose attempt failed ABORTED (its
// plugin aborted, or the run's end cut it off) waits for its retry while
// the run can go on — running or paused it is idle — and failed once the
// run has ended; every view (show's nodes, the counts of runs and the
// live view, graph RUN's colours, status's for_each lines) says the same.
func TestAbortedOnlyOnceEnded(t *testing.T) {
	t.Parallel()
	lint := graph.NodeDef{ID: "lint", Kind: graph.KindRequired, Binding: "shell", DependsOn: []string{},
		ForEach: &graph.ForEachDef{MaxItems: 10, Items: []graph.ForEachItem{{Key: "x", Value: json.RawMessage(`"x"`)}}}}
	def := &graph.Definition{Name: "dag", GlobalConcurrency: 3, RetryCapPerNode: 1, KeyedConcurrency: []graph.KeyLimit{}, Nodes: []graph.NodeDef{
		{ID: "a", Kind: graph.KindRequired, Lane: "w", Prompt: "p", DependsOn: []string{}}, lint}}
	aborted := []any{
		graph.EventNodeExpanded, graph.ExpandedData{Node: "lint", Keys: []string{"x"}},
		graph.EventNodeDispatched, graph.DispatchedData{Dispatches: []graph.Dispatch{{Node: "a", Position: "dag/a/1"}, {Node: "lint", Position: "dag/lint[x]/1"}}},
		graph.EventAttemptStarted, graph.AttemptStartedData{Node: "a", Position: "dag/a/1", AttemptID: "x"},
		graph.EventNodeFailed, graph.FailedData{Node: "a", Position: "dag/a/1", Code: runstate.CodeAborted, Message: "the plugin aborted the attempt"},
		graph.EventNodeFailed, graph.FailedData{Node: "lint", Position: "dag/lint[x]/1", Code: runstate.CodeAborted, Message: "the plugin aborted the attempt"},
	}
	tests := []struct {
		name  string
		end   []any
		want  string // a's and lint[x]'s status, and lint's
		group string
	}{
		{"running", nil, StatusIdle, StatusStarted},
		{"paused", []any{graph.EventRunWaiting, runstate.Message("r", runstate.KindPaused, "OPERATOR_PAUSE", "paused")}, StatusIdle, StatusStarted},
		{"ended", []any{graph.EventRunFinished, runstate.Message("r", runstate.KindFail, runstate.CodeStopped, "stopped")}, StatusFailed, StatusFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			st := foldDef(t, def, append(append([]any{}, aborted...), tt.end...)...)
			now := t0.Add(time.Minute)
			a, _ := NodeOf(st, "a", now, true)
			if a.Status != tt.want || (tt.want == StatusFailed) != (a.Failure != nil && a.Failure.Code == runstate.CodeAborted) {
				t.Errorf("show a: %s %+v; want %s (with its ABORTED failure once failed)", a.Status, a.Failure, tt.want)
			}
			if x, _ := NodeOf(st, "lint[x]", now, true); x.Status != tt.want {
				t.Errorf("show lint[x]: %s, want %s", x.Status, tt.want)
			}
			failed := 0
			if tt.want == StatusFailed {
				failed = 2
			}
			if c := Summarize(st, "/runs/r", now, false).Nodes; c.Failed != failed {
				t.Errorf("counts %+v; want %d failed", c, failed)
			}
			if c := NewLive(st, "/runs/r").Snapshot(now, false).Summary.Nodes; c.Failed != failed {
				t.Errorf("live view counts %+v; want %d failed", c, failed)
			}
			if diff := cmp.Diff(map[string]string{"a": tt.want, "lint": tt.group}, Statuses(st, true)); diff != "" {
				t.Errorf("graph RUN colours (-want +got):\n%s", diff)
			}
			_, each := Groups(st, true)
			if len(each) != 1 || each[0].Status != tt.group || each[0].Failed != failed/2 {
				t.Errorf("status for_each %+v; want %s with %d failed", each, tt.group, failed/2)
			}
		})
	}
}

// TestSkippedOnceEnded: a node never dispatched waits (idle) while the run
// can go on — running or paused — and once the run has ended it is
// skipped, counted done, unless a failed dependency blocked it; every view
// (show's nodes, the counts of runs and the live view, graph RUN's
// colours, status's for_each lines) says the same.
func TestSkippedOnceEnded(t *testing.T) {
	t.Parallel()
	lint := graph.NodeDef{ID: "lint", Kind: graph.KindRequired, Binding: "shell", DependsOn: []string{"c"},
		ForEach: &graph.ForEachDef{MaxItems: 10, Items: []graph.ForEachItem{{Key: "x", Value: json.RawMessage(`"x"`)}}}}
	def := &graph.Definition{Name: "dag", GlobalConcurrency: 1, RetryCapPerNode: 0, KeyedConcurrency: []graph.KeyLimit{}, Nodes: []graph.NodeDef{
		{ID: "a", Kind: graph.KindRequired, Lane: "w", Prompt: "p", DependsOn: []string{}},
		{ID: "b", Kind: graph.KindRequired, Binding: "shell", DependsOn: []string{"a"}},
		{ID: "c", Kind: graph.KindRequired, Binding: "shell", DependsOn: []string{}},
		lint}}
	failed := []any{
		graph.EventNodeDispatched, graph.DispatchedData{Dispatches: []graph.Dispatch{{Node: "a", Position: "dag/a/1"}}},
		graph.EventAttemptStarted, graph.AttemptStartedData{Node: "a", Position: "dag/a/1", AttemptID: "x"},
		graph.EventNodeFailed, graph.FailedData{Node: "a", Position: "dag/a/1", Code: "NODE_FAILED", Message: "no"},
	}
	tests := []struct {
		name string
		end  []any
		want string // c's status, and lint's
		done int
	}{
		{"running", nil, StatusIdle, 2},
		{"paused", []any{graph.EventRunWaiting, runstate.Message("r", runstate.KindPaused, "OPERATOR_PAUSE", "paused")}, StatusIdle, 2},
		{"failed", []any{graph.EventRunFinished, runstate.Message("r", runstate.KindFail, "DAG_NODE_FAILED", "a failed")}, StatusSkipped, 4},
		{"stopped", []any{graph.EventRunFinished, runstate.Message("r", runstate.KindFail, runstate.CodeStopped, "stopped")}, StatusSkipped, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			st := foldDef(t, def, append(append([]any{}, failed...), tt.end...)...)
			now := t0.Add(time.Minute)
			got := map[string]string{}
			for _, n := range Nodes(st, now, true) {
				got[n.ID] = n.Status
			}
			want := map[string]string{"a": StatusFailed, "b": StatusBlocked, "c": tt.want, "lint": tt.want}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("show's nodes (-want +got):\n%s", diff)
			}
			if c, _ := NodeOf(st, "c", now, true); c.Status != tt.want {
				t.Errorf("show c: %s, want %s", c.Status, tt.want)
			}
			if diff := cmp.Diff(want, Statuses(st, true)); diff != "" {
				t.Errorf("graph RUN colours (-want +got):\n%s", diff)
			}
			skipped := 0
			if tt.want == StatusSkipped {
				skipped = 2
			}
			wantCounts := Counts{Total: 4, Done: tt.done, Failed: 1, Blocked: 1, Skipped: skipped}
			if diff := cmp.Diff(wantCounts, Summarize(st, "/runs/r", now, false).Nodes); diff != "" {
				t.Errorf("runs counts (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(wantCounts, NewLive(st, "/runs/r").Snapshot(now, false).Summary.Nodes); diff != "" {
				t.Errorf("live view counts (-want +got):\n%s", diff)
			}
			if _, each := Groups(st, true); len(each) != 1 || each[0].Status != tt.want {
				t.Errorf("status for_each %+v; want %s", each, tt.want)
			}
		})
	}
}
