package store_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/obversa/obversa/store"
	"github.com/obversa/obversa/store/simfs"
)

// boundary reports whether op changes what a power loss leaves behind:
// the points at which TestPowerLoss cuts the power.
func boundary(op simfs.Op) bool {
	switch op {
	case simfs.OpWrite, simfs.OpTruncate, simfs.OpSync, simfs.OpDatasync, simfs.OpMkdir,
		simfs.OpRemove, simfs.OpRename, simfs.OpLink, simfs.OpSyncDir:
		return true
	}
	return false
}

// plScenario is what a power-loss scenario acknowledged before the power
// went.
type plScenario struct {
	created bool       // CreateRun returned the run
	acked   [][]string // ids of each acknowledged batch, in order
	pending []string   // ids of the batch in flight when the power went
	arts    []store.ArtifactRef
}

// run appends batches of 1, 3 and 2 events, stores an artifact and
// references it, closes the handle (writing the validated-prefix cache),
// reopens the run and appends two more batches, one of them large. It
// stops at the first error (the power loss).
func (sc *plScenario) run(ctx context.Context, st *store.Store) {
	rec, own, ok := sc.create(ctx, st)
	if !ok {
		return
	}
	defer rec.Close()
	defer own.Release()
	rev := int64(0)
	batch := func(r store.Record, prefix string, n int, data any) bool {
		return sc.batch(ctx, r, &rev, "test:power", prefix, n, data)
	}
	if !batch(rec, "a", 1, "one") || !batch(rec, "b", 3, map[string]int{"n": 3}) || !batch(rec, "c", 2, nil) {
		return
	}
	ref, err := rec.PutArtifact(ctx, []byte("result bytes\n"), "text/plain", "result")
	if err != nil {
		return
	}
	sc.arts = append(sc.arts, ref)
	if !batch(rec, "d", 1, map[string]any{"result": ref}) {
		return
	}
	own.Release()
	if rec.Close() != nil {
		return
	}
	rec, err = st.OpenRun(ctx, "run", store.Policy{})
	if err != nil {
		return
	}
	defer rec.Close()
	if own, err = rec.Lock(ctx); err != nil {
		return
	}
	defer own.Release()
	big := make([]byte, 20000)
	for i := range big {
		big[i] = 'a' + byte(i%26)
	}
	if !batch(rec, "e", 4, string(big)) {
		return
	}
	batch(rec, "f", 1, "last")
}

// create creates the scenario's run and takes its ownership; false when
// the power went first.
func (sc *plScenario) create(ctx context.Context, st *store.Store) (store.Record, store.Ownership, bool) {
	rec, err := st.CreateRun(ctx, "run", store.Policy{})
	if err != nil {
		return nil, nil, false
	}
	sc.created = true
	own, err := rec.Lock(ctx)
	if err != nil {
		rec.Close()
		return nil, nil, false
	}
	return rec, own, true
}

// batch appends n events of type typ with ids prefix-0… and data at *rev,
// noting them pending until acknowledged, and advances *rev; false when
// the append failed (the power went).
func (sc *plScenario) batch(ctx context.Context, r store.Record, rev *int64, typ, prefix string, n int, data any) bool {
	var evs []store.NewEvent
	sc.pending = nil
	for i := range n {
		id := fmt.Sprintf("%s-%d", prefix, i)
		evs = append(evs, store.NewEvent{ID: id, Type: typ, Data: data})
		sc.pending = append(sc.pending, id)
	}
	got, err := r.Append(ctx, *rev, evs...)
	if err != nil {
		return false
	}
	*rev = got
	sc.acked = append(sc.acked, sc.pending)
	sc.pending = nil
	return true
}

// check reopens the run after the power loss: every acknowledged batch is
// there, whole and in order; the batch in flight is there whole or not at
// all; nothing else is; Verify passes; acknowledged artifacts read back.
func (sc *plScenario) check(t *testing.T, fsys *simfs.FS) {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open("/s", "ns", store.WithFS(fsys))
	if err != nil {
		t.Fatal(err)
	}
	rec, err := st.OpenRun(ctx, "run", store.Policy{})
	if errors.Is(err, store.ErrRunNotFound) && !sc.created {
		return
	}
	if err != nil {
		t.Fatalf("reopen after power loss: %v", err)
	}
	var got []string
	var ends []int64
	if err := rec.Read(ctx, 1, func(e store.Event) error {
		got = append(got, e.ID)
		if e.Rev == e.BatchEnd {
			ends = append(ends, e.Rev)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	want := slices.Concat(sc.acked...)
	withPending := slices.Concat(want, sc.pending)
	if !slices.Equal(got, want) && !(len(sc.pending) > 0 && slices.Equal(got, withPending)) {
		t.Fatalf("after power loss the record holds %v; acknowledged %v, in flight %v", got, want, sc.pending)
	}
	if len(got) > 0 && ends[len(ends)-1] != int64(len(got)) {
		t.Fatalf("the record ends inside a batch: batch ends %v, %d events", ends, len(got))
	}
	for _, ref := range sc.arts {
		if _, err := rec.ReadArtifact(ctx, ref); err != nil {
			t.Fatalf("acknowledged artifact: %v", err)
		}
	}
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	rep, err := st.Verify(ctx, "run")
	if err != nil || rep.TornBytes != 0 || rep.Events != int64(len(got)) {
		t.Fatalf("Verify after recovery: %v, %+v", err, rep)
	}
	// The recovered run takes appends again.
	rec, err = st.OpenRun(ctx, "run", store.Policy{})
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	own, err := rec.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer own.Release()
	if _, err := rec.Append(ctx, int64(len(got)), store.NewEvent{Type: "test:after"}); err != nil {
		t.Fatalf("append after recovery: %v", err)
	}
}

// TestPowerLoss cuts the power before every operation that changes the
// file system in a scenario of appends, an artifact, a close and a
// reopen — losing every un-synced byte, or (torn) keeping a random prefix
// of them — and checks that recovery keeps every acknowledged batch and
// shows no partial one.
func TestPowerLoss(t *testing.T) {
	t.Parallel()
	full := crashEach(t, (*plScenario).run, 1)
	if len(full.acked) != 6 {
		t.Fatalf("the scenario acknowledged %d batches", len(full.acked))
	}
}

// crashEach counts the boundaries of scenario run without a power loss
// (at least 30), then, for every k, runs it again with the power cut
// before the k-th boundary (and once after the last), losing every
// un-synced byte, and under torn seeds keeping some of them
// (simfs.CrashTorn), and checks each recovery. It returns what the
// uninterrupted run acknowledged.
func crashEach(t *testing.T, scenario func(*plScenario, context.Context, *store.Store), torn int) plScenario {
	t.Helper()
	ctx := context.Background()
	fsys := simfs.New()
	total := 0
	fsys.SetHook(func(op simfs.Op, _ string) error {
		if boundary(op) {
			total++
		}
		return nil
	})
	st, err := store.Open("/s", "ns", store.WithFS(fsys))
	if err != nil {
		t.Fatal(err)
	}
	var full plScenario
	scenario(&full, ctx, st)
	if total < 30 {
		t.Fatalf("the scenario acknowledged %d batches over %d boundaries", len(full.acked), total)
	}
	for k := 1; k <= total+1; k++ {
		for seed := range torn + 1 {
			t.Run(fmt.Sprintf("boundary=%d/seed=%d", k, seed), func(t *testing.T) {
				fsys := simfs.New()
				crash := func() {
					if seed > 0 {
						fsys.CrashTorn(uint64(k*10 + seed))
					} else {
						fsys.Crash()
					}
				}
				n := 0
				fsys.SetHook(func(op simfs.Op, _ string) error {
					if !boundary(op) {
						return nil
					}
					if n++; n == k {
						crash()
						return simfs.ErrCrashed
					}
					return nil
				})
				st, err := store.Open("/s", "ns", store.WithFS(fsys))
				if err != nil {
					t.Fatal(err)
				}
				var sc plScenario
				scenario(&sc, ctx, st)
				fsys.SetHook(nil)
				if n < k { // the scenario ended first: lose the power now
					crash()
				}
				sc.check(t, fsys)
			})
		}
	}
	return full
}
