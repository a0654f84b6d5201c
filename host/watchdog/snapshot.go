package watchdog

import (
	"context"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/obversa/obversa/host/runstate"
	"github.com/obversa/obversa/store"
)

// The worker, the run's one writer, keeps the fold snapshot
// (docs/record.md, "The fold snapshot") beside the record. The
// executor's own State cannot be saved: it folds events before they are
// recorded, without their commit times. So a goroutine keeps a second
// fold of the record itself, catching it up in batches off the
// executor's path, saves it every snapshotEvery events and once more when
// the worker ends (the run finished, paused or stopped), so a reader
// folds only what was recorded since.
const (
	// snapshotCatchUp is how many recorded events the snapshot fold lets
	// pass before it folds them: large batches keep its cost apart from
	// each append's.
	snapshotCatchUp = 4096
	// snapshotEvery is how many events pass between two saves, at the
	// least: a save encodes the whole fold, so they also come at least a
	// quarter of the record apart (at 16 384, 32 768 … 65 536, 81 920,
	// 102 400, 128 000 … events), and the saves of a run cost a few
	// times one save of its end.
	snapshotEvery = 16384
	// snapshotMin is the shortest record kept a snapshot of: a reader
	// folds a shorter one in a few milliseconds.
	snapshotMin = 256
	// snapshotPoll is how often the goroutine looks at the record's
	// revision.
	snapshotPoll = 500 * time.Millisecond
	// snapshotFinal bounds the last catch-up and save as the worker ends.
	snapshotFinal = 10 * time.Second
)

// snapshotter keeps a run's fold snapshot; stop saves the last one.
type snapshotter struct {
	run    store.Record
	log    hclog.Logger
	st     *runstate.State
	saved  int64
	stopc  chan struct{}
	wg     sync.WaitGroup
	failed bool // a save failed: no more are tried (the snapshot is a cache)
}

// startSnapshots starts keeping run's fold snapshot. The fold begins from
// the snapshot already there (runstate.LoadWithSnapshot).
func startSnapshots(run store.Record, log hclog.Logger) *snapshotter {
	s := &snapshotter{run: run, log: log, stopc: make(chan struct{})}
	s.wg.Add(1)
	go s.loop()
	return s
}

func (s *snapshotter) loop() {
	defer s.wg.Done()
	t := time.NewTicker(snapshotPoll)
	defer t.Stop()
	for {
		select {
		case <-s.stopc:
			return
		case <-t.C:
		}
		if s.failed || s.st != nil && s.run.Rev()-s.st.Rev() < snapshotCatchUp {
			continue
		}
		s.step(context.Background(), false)
	}
}

// step catches the fold up and saves it: at the end (final) when it
// moved since the last save, before that when it moved far enough.
func (s *snapshotter) step(ctx context.Context, final bool) {
	var err error
	if s.st == nil {
		s.st, err = runstate.LoadWithSnapshot(ctx, s.run, s.run.Dir())
	} else {
		err = s.st.CatchUp(ctx, s.run)
	}
	gap := max(snapshotEvery, s.saved/4)
	if final {
		gap = 1
	}
	if err == nil && s.st.Rev() >= snapshotMin && s.st.Rev()-s.saved >= gap {
		if err = runstate.SaveSnapshot(s.run.Dir(), s.st); err == nil {
			s.saved = s.st.Rev()
		}
	}
	if err != nil {
		s.failed = true
		s.log.Warn("fold snapshot not saved; readers fold the whole record", "error", err)
	}
}

// stop ends the goroutine and saves the fold of everything recorded, if
// it moved since the last save.
func (s *snapshotter) stop() {
	close(s.stopc)
	s.wg.Wait()
	if s.failed {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), snapshotFinal)
	defer cancel()
	s.step(ctx, true)
}
