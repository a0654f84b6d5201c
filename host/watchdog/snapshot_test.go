package watchdog

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/obversa/obversa/host/runstate"
	"github.com/obversa/obversa/store"
)

// TestSaveSnapshot: the worker's last act saves the fold of the whole
// record, starting from the snapshot a worker before it left, or from the
// start its own fold read; a short record gets none.
func TestSaveSnapshot(t *testing.T) {
	ctx := context.Background()
	run, err := store.OpenRunDir(ctx, newRun(t), store.Policy{})
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	owner, err := run.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer owner.Release()
	appendWorkers := func(n int) {
		t.Helper()
		b := make([]store.NewEvent, n)
		for i := range b {
			b[i] = store.NewEvent{Type: runstate.EventWorkerStarted, Data: runstate.WorkerStartedData{PID: 100 + i, StartTime: 1}}
		}
		if _, err := run.Append(ctx, run.Rev(), b...); err != nil {
			t.Fatal(err)
		}
	}
	snapRev := func() int64 {
		b, err := os.ReadFile(filepath.Join(run.Dir(), runstate.SnapshotFile))
		if err != nil {
			return 0
		}
		var h struct {
			Rev int64 `json:"rev"`
		}
		line, _, _ := bytes.Cut(b, []byte("\n"))
		if err := json.Unmarshal(line, &h); err != nil {
			t.Fatal(err)
		}
		return h.Rev
	}
	log := hclog.NewNullLogger()
	own, err := runstate.Load(ctx, run)
	if err != nil {
		t.Fatal(err)
	}
	appendWorkers(snapshotMin - 10)
	saveSnapshot(run, own, log)
	if got := snapRev(); got != 0 {
		t.Errorf("a snapshot of a %d-event record", run.Rev())
	}
	for _, n := range []int{300, 50} {
		appendWorkers(n)
		saveSnapshot(run, own, log)
		if got := snapRev(); got != run.Rev() {
			t.Errorf("the snapshot folds rev %d, the record ends at %d", got, run.Rev())
		}
		if err := runstate.CheckSnapshot(ctx, run, run.Dir()); err != nil {
			t.Error(err)
		}
	}
}
