package store_test

import (
	"bytes"
	"context"
	"io"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/obversa/obversa/store"
	"github.com/obversa/obversa/store/simfs"
)

// TestClosingWritersAtOnceOneTrims: writers that close at the same moment
// each find the others' writer marks when they first ask for it
// exclusive; one refused gives its own mark up and asks once more, so
// that one of them trims and the finished run's events.jsonl is plain
// JSON Lines. Each used to give up at the first refusal, and two closing
// at once left the zero tail. A writer that is still open keeps its tail
// either way.
func TestClosingWritersAtOnceOneTrims(t *testing.T) {
	ctx := context.Background()
	fsys, st, r := simRun(t) // one event, over a zero tail
	path := st.RunDir("r") + "/events.jsonl"
	other, err := st.OpenRun(ctx, "r", store.Policy{})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if b := wholeFile(t, fsys, path); bytes.IndexByte(b, 0) < 0 {
		t.Fatalf("a writer closing while another is open cut off the zero tail (%d bytes left)", len(b))
	}
	// The first ask of other's close is refused, as when a writer closing
	// at the same moment still holds its mark.
	var refused atomic.Bool
	fsys.SetHook(func(op simfs.Op, p string) error {
		if op == simfs.OpLock && strings.HasSuffix(p, "/events.jsonl") && refused.CompareAndSwap(false, true) {
			return syscall.EWOULDBLOCK
		}
		return nil
	})
	defer fsys.SetHook(nil)
	if err := other.Close(); err != nil {
		t.Fatal(err)
	}
	if !refused.Load() {
		t.Fatal("the close asked for no lock")
	}
	if b := wholeFile(t, fsys, path); bytes.IndexByte(b, 0) >= 0 || !bytes.HasSuffix(b, []byte("\n")) || bytes.Count(b, []byte("\n")) != 1 {
		t.Fatalf("after the last writer closed events.jsonl is not one line of JSON Lines (%d bytes, NUL at %d)", len(b), bytes.IndexByte(b, 0))
	}
}

// wholeFile reads a file of fsys, zero tail and all.
func wholeFile(t *testing.T, fsys store.FS, path string) []byte {
	t.Helper()
	f, err := fsys.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
