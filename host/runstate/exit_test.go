package runstate

import "testing"

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
