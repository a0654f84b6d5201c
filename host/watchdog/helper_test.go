package watchdog

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/obversa/obversa/host/graph"
	"github.com/obversa/obversa/host/plan"
	"github.com/obversa/obversa/host/runstate"
	"github.com/obversa/obversa/store"
)

// ownRun opens the run at runDir as a worker does (its record and the
// fold of it) and takes its lock; both are let go when t ends.
func ownRun(t *testing.T, runDir string) (store.Record, *runstate.State) {
	t.Helper()
	ctx := context.Background()
	run, st, err := openRun(ctx, DirRef(runDir))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { run.Close() })
	owner, err := run.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { owner.Release() })
	return run, st
}

// newRun creates a run under a temporary storage directory whose graph
// has one binding node "a" waiting for approval, records
// graph:run-started and the given events (type, data pairs) as their
// owner, releases the ownership and returns the run directory.
func newRun(t *testing.T, events ...any) string {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	def := &graph.Definition{Name: "dag", GlobalConcurrency: 1, KeyedConcurrency: []graph.KeyLimit{}, Nodes: []graph.NodeDef{
		{ID: "a", Kind: graph.KindRequired, Binding: "shell", DependsOn: []string{}, Approval: true},
	}}
	p := &plan.Plan{RunID: "r", Namespace: "default", Storage: plan.Storage{Directory: dir},
		Workspace: plan.Workspace{Provider: "none"}, TeardownGraceMS: 100,
		Restart: plan.Restart{MaxRestarts: 1, InitialBackoffMS: 100, MaxBackoffMS: 400},
		Plugins: []plan.PluginPlan{}, Lanes: []plan.LanePlan{}}
	rs, err := plan.NewRunStarted("run.hcl", def, p, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(dir, "default")
	if err != nil {
		t.Fatal(err)
	}
	run, err := st.CreateRun(ctx, "r", store.Policy{})
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	owner, err := run.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer owner.Release()
	batch := []store.NewEvent{{Type: graph.EventRunStarted, Data: rs}}
	for i := 0; i+1 < len(events); i += 2 {
		batch = append(batch, store.NewEvent{Type: events[i].(string), Data: events[i+1]})
	}
	if _, err := run.Append(ctx, 0, batch...); err != nil {
		t.Fatal(err)
	}
	return st.RunDir("r")
}

// pausedForApproval is the record of node "a" paused for approval and
// the run paused on it.
func pausedForApproval() []any {
	req := graph.PauseRequest{Kind: graph.PauseApproval, Position: "dag/a/1"}
	return []any{
		graph.EventNodeDispatched, graph.DispatchedData{Dispatches: []graph.Dispatch{{Node: "a", Position: "dag/a/1"}}},
		graph.EventNodePaused, graph.PausedData{Node: "a", Position: "dag/a/1", Request: req},
		graph.EventRunWaiting, json.RawMessage(`{"run_id":"r","kind":"paused","code":"","output":{"paused":[{"kind":"approval","position":"dag/a/1"}]}}`),
	}
}

// foldOf folds the record of the run in runDir, read-only.
func foldOf(t *testing.T, runDir string) *runstate.State {
	t.Helper()
	ctx := context.Background()
	run, err := store.OpenRunDirReadOnly(ctx, runDir)
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	st, err := runstate.Load(ctx, run)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// events returns the types of the run's events after graph:run-started.
func events(t *testing.T, runDir string) []string {
	t.Helper()
	run, err := store.OpenRunDirReadOnly(context.Background(), runDir)
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	var out []string
	if err := run.Read(context.Background(), 2, func(e store.Event) error {
		out = append(out, e.Type)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}
