package runstate

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/obversa/obversa/store"
)

// fromRevs reads a record and notes the revision each read starts from.
type fromRevs struct {
	Reader
	from []int64
}

func (f *fromRevs) Read(ctx context.Context, from int64, fn func(store.Event) error) error {
	f.from = append(f.from, from)
	return f.Reader.Read(ctx, from, fn)
}

// TestRestoreAhead: a snapshot restored ahead, on its own goroutine, and
// then tied to the record is the full fold, read from the snapshot's
// revision on (run with -race); one that is unusable, missing or of
// another directory is ignored and the whole record folded; a second
// Load folds the whole record; a Load whose context ends first returns
// its error.
func TestRestoreAhead(t *testing.T) {
	ctx := context.Background()
	run, dir := storeRecord(t, richRun(t)...)
	full, err := Load(ctx, run)
	if err != nil {
		t.Fatal(err)
	}
	half := foldUpTo(t, run, full.Rev()/2)
	if err := SaveSnapshot(dir, half); err != nil {
		t.Fatal(err)
	}
	other := t.TempDir()
	if err := SaveSnapshot(other, half); err != nil {
		t.Fatal(err)
	}
	load := func(t *testing.T, a *Ahead, dir string) []int64 {
		t.Helper()
		rec := &fromRevs{Reader: run}
		got, err := a.Load(ctx, rec, dir)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(full, got, deep...); d != "" {
			t.Fatalf("fold (-full +restored ahead):\n%s", d)
		}
		return rec.from
	}

	a := RestoreAhead(dir)
	if from := load(t, a, dir); len(from) != 1 || from[0] != half.Rev() {
		t.Errorf("restored ahead: reads from %v, want one from the snapshot's rev %d", from, half.Rev())
	}
	if from := load(t, a, dir); len(from) != 1 || from[0] != 1 {
		t.Errorf("second Load: reads from %v, want the whole record", from)
	}
	if from := load(t, RestoreAhead(other), dir); len(from) != 1 || from[0] != 1 {
		t.Errorf("snapshot of another directory: reads from %v, want the whole record", from)
	}
	if err := os.WriteFile(filepath.Join(dir, SnapshotFile), []byte("not a snapshot\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if from := load(t, RestoreAhead(dir), dir); len(from) != 1 || from[0] != 1 {
		t.Errorf("damaged snapshot: reads from %v, want the whole record", from)
	}
	if err := os.Remove(filepath.Join(dir, SnapshotFile)); err != nil {
		t.Fatal(err)
	}
	if from := load(t, RestoreAhead(dir), dir); len(from) != 1 || from[0] != 1 {
		t.Errorf("no snapshot: reads from %v, want the whole record", from)
	}

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := RestoreAhead(other).Load(cctx, run, other); !errors.Is(err, context.Canceled) {
		t.Errorf("Load with an ended context: %v, want context.Canceled", err)
	}
}
