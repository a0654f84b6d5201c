package store_test

import (
	"bytes"
	"context"
	"io"
	"os"
	"testing"

	"github.com/obversa/obversa/store/simfs"
)

// TestPickUpStopsAtTheFirstNUL: a handle picking up another's appends
// reads up to the first NUL, not the zero tail after it. A writer that
// died in the middle of a write left the start of a line there: each
// refresh of a read-only handle (status --follow, the web UI) takes it
// for a write in progress and shows nothing of it, reading a few KiB, not
// the MiB of NULs after it, until an open recovers it.
func TestPickUpStopsAtTheFirstNUL(t *testing.T) {
	ctx := context.Background()
	fsys, st, _ := simRun(t) // one event, over a zero tail
	ro, err := st.OpenRunReadOnly(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	f, err := fsys.OpenFile(st.RunDir("r")+"/events.jsonl", os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	end := bytes.IndexByte(b, 0)
	if end < 0 || len(b)-end < 1<<20 {
		t.Fatalf("the file is %d bytes with its lines ending at %d: no zero tail of a MiB", len(b), end)
	}
	if _, err := f.WriteAt([]byte(`{"batch_end":2,"data":"tw`), int64(end)); err != nil {
		t.Fatal(err)
	}
	f.Close()
	before := fsys.Count(simfs.OpRead)
	const refreshes = 10
	for range refreshes {
		if rev := ro.Rev(); rev != 1 {
			t.Fatalf("read-only handle at rev %d, want 1: the torn line is no event", rev)
		}
	}
	if reads := fsys.Count(simfs.OpRead) - before; reads > 4*refreshes {
		t.Fatalf("%d refreshes made %d reads: they read the zero tail past the torn line", refreshes, reads)
	}
}
