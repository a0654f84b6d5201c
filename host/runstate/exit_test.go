package runstate

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestPreviousExit: after a worker starts, the fold still holds the
// recorded crash of the worker before it, cause included (the executor
// names it in a reconcile request), and forgets it once a worker starts
// whose predecessor's end was not recorded.
func TestPreviousExit(t *testing.T) {
	events := richRun(t)
	run, _ := storeRecord(t, events...)
	// Revisions 2: worker 10 starts; 6: it exits (killed); 8: worker 11 starts.
	if x := foldUpTo(t, run, 7).PreviousExit(); x != nil {
		t.Fatalf("previous exit before a second worker started: %+v", x)
	}
	s := foldUpTo(t, run, 8)
	x := s.PreviousExit()
	if x == nil || x.Signal != "killed" || x.ExitCode != -1 || x.Restart != 0 || s.LastExit() != nil {
		t.Fatalf("previous exit %+v, last exit %+v; want worker 10's (signal killed), none since", x, s.LastExit())
	}
	// Worker 12 starts after a pause and resume: worker 11 ended with a
	// result, no crash was recorded.
	if x := foldUpTo(t, run, 19).PreviousExit(); x != nil {
		t.Fatalf("previous exit after a worker that ended with a result: %+v", x)
	}
}

// TestPreviousExitInSnapshot: a snapshot taken after a worker started
// restores the crash of the worker before it, the cause it reported
// included, so a worker that starts from the snapshot names the same
// cause in a reconcile request as one that folds the whole record.
// (TestSnapshotEveryRevision cannot see it: by the record's end a later
// worker has started and the previous exit is gone again.)
func TestPreviousExitInSnapshot(t *testing.T) {
	events := richRun(t)
	for i := 0; i+1 < len(events); i += 2 {
		if events[i] == EventWorkerExited {
			events[i+1] = WorkerExitedData{PID: 10, ExitCode: 1, Restart: 0, Reason: ExitCrash,
				Code: "PLUGIN_DIED", Message: `plugin "shell" (/p) died during Invoke: killed by signal SIGKILL`}
		}
	}
	run, _ := storeRecord(t, events[:16]...)
	s := foldUpTo(t, run, 8)
	want := s.PreviousExit()
	if want == nil || want.Code != "PLUGIN_DIED" || want.Message == "" || want.ExitCode != 1 {
		t.Fatalf("previous exit %+v, want worker 10's with its cause", want)
	}
	dir := t.TempDir()
	if err := SaveSnapshot(dir, s); err != nil {
		t.Fatal(err)
	}
	_, got, err := restoreSnapshot(dir)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, got.PreviousExit()); d != "" {
		t.Fatalf("previous exit restored from the snapshot (-folded +restored):\n%s", d)
	}
}

// TestExitDiedUnder: a PLUGIN_DIED exit names the position its plugin
// died under from the recorded died_under; a record written before that
// field was kept gives it from the message's end (DiedUnder's suffix);
// other exits, and messages that name no position, give none.
func TestExitDiedUnder(t *testing.T) {
	msg := `plugin "shell" (/p) died during Invoke: killed by signal SIGKILL`
	for _, c := range []struct {
		name string
		d    WorkerExitedData
		want string
	}{
		{"recorded", WorkerExitedData{Code: CodePluginDied, Message: msg + DiedUnder("dag/a/1"), DiedUnder: "dag/a/1"}, "dag/a/1"},
		{"recorded, message capped", WorkerExitedData{Code: CodePluginDied, Message: msg[:20] + "…", DiedUnder: "dag/a/1"}, "dag/a/1"},
		{"older record", WorkerExitedData{Code: CodePluginDied, Message: msg + DiedUnder("dag/b/2")}, "dag/b/2"},
		{"older record, no position", WorkerExitedData{Code: CodePluginDied, Message: msg}, ""},
		{"another code", WorkerExitedData{Code: CodeRunStorage, Message: msg + DiedUnder("dag/a/1"), DiedUnder: "dag/a/1"}, ""},
		{"killed", WorkerExitedData{Signal: "killed", ExitCode: -1}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			events := richRun(t)
			for i := 0; i+1 < len(events); i += 2 {
				if events[i] == EventWorkerExited {
					events[i+1] = c.d
				}
			}
			run, _ := storeRecord(t, events[:12]...)
			s := foldUpTo(t, run, 6)
			if x := s.LastExit(); x == nil || x.DiedUnder != c.want {
				t.Fatalf("last exit %+v, want died under %q", x, c.want)
			}
		})
	}
}
