package runstate

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/obversa/obversa/host/graph"
	"github.com/obversa/obversa/host/snapcodec"
	"github.com/obversa/obversa/store"
)

// TestSnapshotErrorsKeepTheirCause: an unusable snapshot's error is
// ErrSnapshotInvalid and the decoder's own error both, so a caller can
// tell a payload that does not decode from a part that does not parse.
func TestSnapshotErrorsKeepTheirCause(t *testing.T) {
	full, err := record(t, richRun(t)...)
	if err != nil {
		t.Fatal(err)
	}
	payload, err := full.encodePayload()
	if err != nil {
		t.Fatal(err)
	}
	if err := New().restorePayload(payload[:len(payload)-1], false); !errors.Is(err, ErrSnapshotInvalid) || !errors.Is(err, snapcodec.ErrCorrupt) {
		t.Errorf("a cut payload: %v, want ErrSnapshotInvalid and snapcodec.ErrCorrupt", err)
	}
	// The start's JSON replaced by bytes that are not JSON.
	w := snapcodec.NewWriter(0)
	w.Bytes([]byte("{"))
	b, err := w.Finish()
	if err != nil {
		t.Fatal(err)
	}
	var syntax *json.SyntaxError
	if err := New().restorePayload(b, false); !errors.Is(err, ErrSnapshotInvalid) || !errors.As(err, &syntax) {
		t.Errorf("a start that is not JSON: %v, want ErrSnapshotInvalid and a *json.SyntaxError", err)
	}
	if _, _, err := parseSnapshot([]byte("{\n")); !errors.Is(err, ErrSnapshotInvalid) || !errors.As(err, &syntax) {
		t.Errorf("a header that is not JSON: %v, want ErrSnapshotInvalid and a *json.SyntaxError", err)
	}
}

// restoredRich returns the fold of a rich run's record and the State
// restored from the snapshot of it.
func restoredRich(t *testing.T) (full, got *State) {
	t.Helper()
	ctx := context.Background()
	run, dir := storeRecord(t, richRun(t)...)
	full, err := Load(ctx, run)
	if err != nil {
		t.Fatal(err)
	}
	if err := SaveSnapshot(dir, full); err != nil {
		t.Fatal(err)
	}
	got, err = fromSnapshot(ctx, run, dir)
	if err != nil {
		t.Fatal(err)
	}
	return full, got
}

// TestSnapshotDefersPositions: a restore checks the positions and
// sequences but builds them only when one is asked for; what it then
// returns is the full fold's.
func TestSnapshotDefersPositions(t *testing.T) {
	full, got := restoredRich(t)
	if got.later.Load() == nil || len(got.pos) != 0 || len(got.seq) != 0 {
		t.Fatalf("the restore built %d positions and %d sequences", len(got.pos), len(got.seq))
	}
	if d := cmp.Diff(full.Position("dag/a/1"), got.Position("dag/a/1")); d != "" {
		t.Errorf("position (-full +restored):\n%s", d)
	}
	if got.later.Load() != nil || got.Sequence("dag/a/1") != full.Sequence("dag/a/1") || len(got.pos) != len(full.pos) {
		t.Errorf("after a position was asked for: %d positions, sequence %d, want %d and %d",
			len(got.pos), got.Sequence("dag/a/1"), len(full.pos), full.Sequence("dag/a/1"))
	}
}

// TestSnapshotPositionsConcurrentReaders: readers of one restored State
// may ask for positions and sequences at once; the first ask builds them
// (run with -race: `go test -race ./host/runstate/`).
func TestSnapshotPositionsConcurrentReaders(t *testing.T) {
	full, got := restoredRich(t)
	if got.later.Load() == nil {
		t.Fatal("the restore built its positions; the test needs them deferred")
	}
	var wg sync.WaitGroup
	seqs := make([]int, 8)
	poss := make([]*Position, 8)
	for i := range seqs {
		wg.Go(func() {
			if i%2 == 0 {
				seqs[i], poss[i] = got.Sequence("dag/a/1"), got.Position("dag/a/1")
			} else {
				poss[i], seqs[i] = got.Position("dag/a/1"), got.Sequence("dag/a/1")
			}
		})
	}
	wg.Wait()
	for i := range seqs {
		if seqs[i] != full.Sequence("dag/a/1") {
			t.Errorf("reader %d: sequence %d, want %d", i, seqs[i], full.Sequence("dag/a/1"))
		}
		if d := cmp.Diff(full.Position("dag/a/1"), poss[i]); d != "" {
			t.Errorf("reader %d: position (-full +restored):\n%s", i, d)
		}
	}
}

// firstGarbled reads a record with its first event's data replaced by
// bytes that are not JSON (its digest kept).
type firstGarbled struct{ Reader }

func (g firstGarbled) Read(ctx context.Context, from int64, fn func(store.Event) error) error {
	return g.Reader.Read(ctx, from, func(e store.Event) error {
		if e.Rev == 1 {
			e.Data = json.RawMessage("{")
		}
		return fn(e)
	})
}

// TestRefold: a fold of the record again, for a process that holds one,
// is the full fold, and takes the start from the fold it holds: a first
// event that would not decode is not decoded. A fold whose start is of
// another record, or was folded before it was recorded, is no source of
// it.
func TestRefold(t *testing.T) {
	ctx := context.Background()
	run, _ := storeRecord(t, richRun(t)...)
	full, err := Load(ctx, run)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Refold(ctx, firstGarbled{run}, "", full)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(full, got, deep...); d != "" {
		t.Errorf("refold (-full +refold):\n%s", d)
	}
	if _, err := Refold(ctx, firstGarbled{run}, "", nil); err == nil {
		t.Error("without a fold to take the start from, a first event that does not decode was not decoded")
	}
	other, _ := storeRecord(t, richRun(t)[:6]...)
	ofull, err := Load(ctx, other)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Refold(ctx, firstGarbled{run}, "", ofull); err == nil {
		t.Error("the start of another record's fold was taken")
	}
	folded := New()
	if err := folded.Fold(graph.EventRunStarted, nil, started(t)); err != nil {
		t.Fatal(err)
	}
	if _, err := Refold(ctx, firstGarbled{run}, "", folded); err == nil {
		t.Error("the start of a fold that folded it before it was recorded was taken")
	}
}

// TestSnapshotUsageInOrder: a restored State lists its nodes' usage in the
// order of their first engine call, each total the one the fold of a
// later call adds to; a snapshot that gives a node two totals is invalid.
func TestSnapshotUsageInOrder(t *testing.T) {
	full, got := restoredRich(t)
	if d := cmp.Diff(full.Usage(), got.Usage()); d != "" || len(got.order) == 0 {
		t.Fatalf("usage (-full +restored):\n%s", d)
	}
	for _, n := range got.order {
		if got.usage[n.node] != n.u {
			t.Errorf("node %q: the ordered total is not the one the fold adds to", n.node)
		}
	}
	full.order = append(slices.Clone(full.order), full.order[0])
	b, err := full.encodePayload()
	if err != nil {
		t.Fatal(err)
	}
	if err := New().restorePayload(b, false); !errors.Is(err, ErrSnapshotInvalid) || !strings.Contains(err.Error(), "two usage totals") {
		t.Errorf("a node with two usage totals: %v, want ErrSnapshotInvalid naming it", err)
	}
}

// TestLoadStartThenCatchUpIsLoad: the start folded alone (LoadStart) and
// caught up with the rest of the record is the fold Load makes, to the
// byte of its snapshot.
func TestLoadStartThenCatchUpIsLoad(t *testing.T) {
	ctx := context.Background()
	run, _ := storeRecord(t, richRun(t)...)
	full, err := Load(ctx, run)
	if err != nil {
		t.Fatal(err)
	}
	got, err := LoadStart(ctx, run)
	if err != nil {
		t.Fatal(err)
	}
	if got.Rev() != 1 || got.Start() == nil {
		t.Fatalf("LoadStart folded to rev %d (start %v), want the start alone", got.Rev(), got.Start() != nil)
	}
	if err := got.CatchUp(ctx, run); err != nil {
		t.Fatal(err)
	}
	want, err := full.encodePayload()
	if err != nil {
		t.Fatal(err)
	}
	have, err := got.encodePayload()
	if err != nil {
		t.Fatal(err)
	}
	if got.Rev() != full.Rev() || string(have) != string(want) {
		t.Fatalf("LoadStart + CatchUp: rev %d, %d payload bytes; Load: rev %d, %d bytes", got.Rev(), len(have), full.Rev(), len(want))
	}
}
