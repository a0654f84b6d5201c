package runview

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/obversa/obversa/host/runstate"
	"github.com/obversa/obversa/store"
)

// TestLiveWorkerExitNotice: a recorded worker exit becomes one notice that
// says how the worker ended in the words status and the progress lines
// use (runstate.Exit.Cause), under the cause's code when the worker
// reported one.
func TestLiveWorkerExitNotice(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		exit      runstate.WorkerExitedData
		code, msg string
	}{
		{"killed", runstate.WorkerExitedData{PID: 7, ExitCode: -1, Signal: "killed", Reason: runstate.ExitCrash},
			"WORKER_EXITED", "worker pid 7 was ended by a signal (killed); restart 1"},
		{"exit status", runstate.WorkerExitedData{PID: 7, ExitCode: 1, Reason: runstate.ExitCrash},
			"WORKER_EXITED", "worker pid 7 exited with status 1; restart 1"},
		{"reported cause", runstate.WorkerExitedData{PID: 7, ExitCode: 1, Reason: runstate.ExitCrash, Code: "PLUGIN_DIED", Message: `plugin "p" died`},
			"PLUGIN_DIED", `worker pid 7 stopped (PLUGIN_DIED: plugin "p" died); restart 1`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			l := NewLive(fold(t), "/runs/r")
			for rev, ev := range []struct {
				typ string
				v   any
			}{{runstate.EventWorkerStarted, runstate.WorkerStartedData{PID: 7, StartTime: 1}}, {runstate.EventWorkerExited, tt.exit}} {
				b, err := json.Marshal(ev.v)
				if err != nil {
					t.Fatal(err)
				}
				got, err := l.Apply(store.Event{Rev: int64(rev + 2), Type: ev.typ, Data: b, TS: t0.Add(time.Duration(rev+2) * time.Second)})
				if err != nil {
					t.Fatal(err)
				}
				if ev.typ != runstate.EventWorkerExited {
					continue
				}
				if len(got) != 1 || got[0].Kind != NoticeCrashed || got[0].Code != tt.code || got[0].Message != tt.msg {
					t.Errorf("notices %+v, want one %s %q", got, tt.code, tt.msg)
				}
			}
		})
	}
}
