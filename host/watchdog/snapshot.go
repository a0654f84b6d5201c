package watchdog

import (
	"context"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/obversa/obversa/host/runstate"
	"github.com/obversa/obversa/store"
)

// The worker, the run's one writer, keeps the fold snapshot
// (docs/architecture.md, "Fold snapshot") beside the record. The
// executor's own State cannot be saved: it folds events before they are
// recorded, without their commit times. So when the worker ends (the run
// finished, paused or stopped) it folds the record itself — from the
// snapshot a worker before it left, if any — and saves that, so a reader
// folds only what was recorded since. Folding while the run goes on
// would compete with it for the machine's cores: on two cores a
// background fold made each node of a 10 000-node DAG half as slow again.
const (
	// snapshotMin is the shortest record kept a snapshot of: a reader
	// folds a shorter one in a few milliseconds.
	snapshotMin = 256
	// snapshotFinal bounds the fold and save as the worker ends.
	snapshotFinal = 30 * time.Second
)

// saveSnapshot folds run's record and saves it as the fold snapshot when
// the record has snapshotMin events or more: from the snapshot a worker
// before it left, else the whole record but for its start, which own,
// the worker's fold, read and checked as the worker began
// (runstate.Refold). A failure is logged, never returned: the snapshot
// is a cache.
func saveSnapshot(run store.Record, own *runstate.State, log hclog.Logger) {
	if run.Rev() < snapshotMin {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), snapshotFinal)
	defer cancel()
	st, err := runstate.Refold(ctx, run, run.Dir(), own)
	if err == nil {
		err = runstate.SaveSnapshot(run.Dir(), st)
	}
	if err != nil {
		log.Warn("fold snapshot not saved; readers fold the whole record", "error", err)
	}
}
