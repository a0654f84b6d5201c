package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/obversa/obversa/host/runstate"
	"github.com/obversa/obversa/store"
)

// TestProgressLineWorkers: a crash line says how the worker ended, never
// a restart the watchdog may not make; a restart has its own line, from
// the restarted worker's start.
func TestProgressLineWorkers(t *testing.T) {
	t.Parallel()
	tests := []struct{ typ, data, want string }{
		{runstate.EventWorkerExited, `{"pid":7,"exit_code":1,"restart":2,"reason":"crash"}`, "  worker exited with status 1"},
		{runstate.EventWorkerExited, `{"pid":7,"exit_code":-1,"signal":"killed","restart":0,"reason":"crash"}`, "  worker was ended by a signal (killed)"},
		{runstate.EventWorkerExited, `{"pid":7,"exit_code":1,"restart":0,"reason":"crash","code":"PLUGIN_DIED","message":"plugin \"p\" (/c/p) died during Run: killed by signal SIGKILL, under the attempt at g/a/1"}`,
			`  worker stopped (PLUGIN_DIED: plugin "p" (/c/p) died during Run: killed by signal SIGKILL, under the attempt at g/a/1)`},
		{runstate.EventWorkerExited, `{"pid":7,"exit_code":1,"restart":0,"reason":"storage","code":"RUN_STORAGE"}`, "  worker stopped (RUN_STORAGE)"},
		{runstate.EventWorkerStarted, `{"pid":8,"start_time":1,"restart":2}`, "  worker restarted (restart 2)"},
		{runstate.EventWorkerStarted, `{"pid":8,"start_time":1,"restart":0}`, ""},
	}
	for _, tt := range tests {
		if got := progressLine(store.Event{Type: tt.typ, Data: []byte(tt.data)}); got != tt.want {
			t.Errorf("progressLine(%s %s) = %q, want %q", tt.typ, tt.data, got, tt.want)
		}
	}
}

// TestPlainLinesRestartOnlyAfterAnEnd: the first worker a resume starts keeps
// the run's restart count, and is printed as a restart only after a worker end.
func TestPlainLinesRestartOnlyAfterAnEnd(t *testing.T) {
	started := store.Event{Type: runstate.EventWorkerStarted, Data: []byte(`{"pid":8,"start_time":1,"restart":1}`)}
	exited := store.Event{Type: runstate.EventWorkerExited, Data: []byte(`{"pid":8,"exit_code":-1,"signal":"killed","restart":1,"reason":"crash"}`)}
	restarted := store.Event{Type: runstate.EventWorkerStarted, Data: []byte(`{"pid":9,"start_time":2,"restart":2}`)}
	next := plainLines()
	var got []string
	for _, e := range []store.Event{started, exited, restarted} {
		got = append(got, next(e))
	}
	want := []string{"", "  worker was ended by a signal (killed)", "  worker restarted (restart 2)"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("plain lines (-want +got):\n%s", diff)
	}
}
