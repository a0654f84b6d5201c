package watchdog

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/obversa/obversa/host/runstate"
	"github.com/obversa/obversa/store"
)

// TestSnapshotter: the worker's snapshot goroutine saves once the record
// passed snapshotEvery events, not again for fewer than the gap after
// it, and once more at the end with every recorded event.
func TestSnapshotter(t *testing.T) {
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
		for n > 0 {
			b := make([]store.NewEvent, min(n, 2000))
			for i := range b {
				b[i] = store.NewEvent{Type: runstate.EventWorkerStarted, Data: runstate.WorkerStartedData{PID: 100 + i, StartTime: 1}}
			}
			if _, err := run.Append(ctx, run.Rev(), b...); err != nil {
				t.Fatal(err)
			}
			n -= len(b)
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

	s := startSnapshots(run, hclog.NewNullLogger())
	appendWorkers(snapshotEvery + 100)
	deadline := time.Now().Add(30 * time.Second)
	for snapRev() == 0 {
		if time.Now().After(deadline) {
			s.stop()
			t.Fatalf("no snapshot %s after the record passed %d events", 30*time.Second, snapshotEvery)
		}
		time.Sleep(50 * time.Millisecond)
	}
	first := snapRev()
	appendWorkers(2000) // fewer than a catch-up, a save's gap and a quarter of the record
	time.Sleep(3 * snapshotPoll)
	if got := snapRev(); got != first {
		t.Errorf("saved again at rev %d, %d events after rev %d", got, got-first, first)
	}
	s.stop()
	if got := snapRev(); got != run.Rev() {
		t.Errorf("the last snapshot folds rev %d, the record ends at %d", got, run.Rev())
	}
	if err := runstate.CheckSnapshot(ctx, run, run.Dir()); err != nil {
		t.Error(err)
	}
}
