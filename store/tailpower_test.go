package store_test

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"

	"github.com/obversa/obversa/store"
	"github.com/obversa/obversa/store/simfs"
)

// runTail appends batches that fill the writer's zero tail and make it
// zero-fill more (a batch bigger than the room left), so that a power
// loss lands during a zero fill, during a batch's overwrite of the tail,
// and between a batch's write and its fdatasync. It stops at the first
// error (the power loss).
func (sc *plScenario) runTail(ctx context.Context, st *store.Store) {
	rec, own, ok := sc.create(ctx, st)
	if !ok {
		return
	}
	defer rec.Close()
	defer own.Release()
	rev := int64(0)
	for i, b := range []struct{ n, size int }{{1, 10}, {3, 700}, {2, 300 << 10}, {1, 5}, {4, 200 << 10}, {2, 900}} {
		if !sc.batch(ctx, rec, &rev, "test:tail", fmt.Sprintf("b%d", i), b.n, strings.Repeat("x", b.size)) {
			return
		}
	}
}

// TestPowerLossZeroTail cuts the power before every write, truncate and
// sync of runTail — losing every un-synced byte, or keeping some of them
// (a prefix of the writes, the last cut short or with only some of its
// sectors written) under several seeds — and checks that recovery keeps
// every acknowledged batch, shows no partial one and rewrites nothing.
func TestPowerLossZeroTail(t *testing.T) {
	t.Parallel()
	seeds := 3
	if testing.Short() {
		seeds = 1
	}
	fills := -1 // zero-fill writes of the run without a power loss
	counted := func(sc *plScenario, ctx context.Context, st *store.Store) {
		fsys := st.FS().(*simfs.FS)
		before := fsys.Count(simfs.OpWrite)
		sc.runTail(ctx, st)
		if fills < 0 {
			fills = fsys.Count(simfs.OpWrite) - before - len(sc.acked)
		}
	}
	full := crashEach(t, counted, seeds)
	if len(full.acked) != 6 || fills < 8 {
		t.Fatalf("the scenario acknowledged %d batches with %d zero-fill writes (want 6 batches and two fills of 1 MiB)", len(full.acked), fills)
	}
}

// TestZeroFillFallsBack: a zero fill the disk refuses costs no failed
// append: the batch is written as a plain append, and no fill is tried
// again for the next batches.
func TestZeroFillFallsBack(t *testing.T) {
	ctx := context.Background()
	for _, errno := range []syscall.Errno{syscall.ENOSPC, syscall.EOPNOTSUPP, syscall.EIO} {
		t.Run(errno.Error(), func(t *testing.T) {
			fsys, st, rec := simRunEmpty(t)
			path := st.RunDir("r") + "/events.jsonl"
			remove := fsys.Inject(simfs.Fault{Op: simfs.OpWrite, Path: "events.jsonl", Err: errno, Short: true})
			if _, err := rec.Append(ctx, 0, store.NewEvent{ID: "a", Type: "t"}); err != nil {
				t.Fatalf("Append with the zero fill failing (%v): %v", errno, err)
			}
			remove()
			writes := fsys.Count(simfs.OpWrite)
			if _, err := rec.Append(ctx, 1, store.NewEvent{ID: "b", Type: "t"}); err != nil {
				t.Fatal(err)
			}
			if got := fsys.Count(simfs.OpWrite) - writes; got != 1 {
				t.Fatalf("the append after a failed fill made %d writes, want 1 (no new fill yet)", got)
			}
			got := fileContent(t, fsys, path)
			f, err := fsys.OpenFile(path, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			fi, _ := f.Stat()
			f.Close()
			if strings.Count(got, "\n") != 2 || fi.Size() != int64(len(got)) {
				t.Fatalf("after plain appends the file is %d bytes holding %q", fi.Size(), got)
			}
			fsys.Crash()
			rec2, err := st.OpenRun(ctx, "r", store.Policy{})
			if err != nil {
				t.Fatal(err)
			}
			defer rec2.Close()
			if rev := rec2.Rev(); rev != 2 {
				t.Fatalf("after a power loss rev %d, want 2", rev)
			}
		})
	}
}
