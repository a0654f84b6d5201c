package store

import (
	"bytes"
	"context"
	"fmt"
	"syscall"
	"testing"
)

// TestCloseLeavesAnotherWritersTail: a handle that appended and closes
// while a writer in another process has the record open leaves the zero
// tail that writer is using (its next batch still overwrites it in
// place); the last writer to close trims, whether or not it appended, and
// a killed writer's mark goes with it.
func TestCloseLeavesAnotherWritersTail(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		otherAppend bool // the other writer appends before the first closes
		kill        bool // the other writer is SIGKILLed, not closed
	}{
		{name: "other appended", otherAppend: true},
		{name: "other only opened"},
		{name: "other killed", otherAppend: true, kill: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			r := newTestRun(t, Policy{})
			path := eventsPath(r)
			mustAppend(t, r.events, 0, NewEvent{Type: "t", Data: "first"})
			h := startHelper(t, "writer", "STORE_DIR="+r.Dir())
			if got := h.line(t); got != "open" {
				t.Fatalf("writer: %q", got)
			}
			want := int64(1)
			if tc.otherAppend {
				fmt.Fprintln(h.in, "append")
				if got := h.line(t); got != "ok 2" {
					t.Fatalf("writer's append: %q", got)
				}
				want = 2
			}
			size := fileSize(t, path)
			if tc.kill {
				h.cmd.Process.Signal(syscall.SIGKILL)
				h.cmd.Wait()
			}
			if err := r.Close(); err != nil {
				t.Fatal(err)
			}
			if tc.kill {
				checkPlain(t, path, want)
				return
			}
			if got := fileSize(t, path); got != size {
				t.Fatalf("a closing handle changed the file from %d to %d bytes while another writer had it open", size, got)
			}
			fmt.Fprintln(h.in, "append")
			if got := h.line(t); got != fmt.Sprintf("ok %d", want+1) {
				t.Fatalf("writer's append after the other closed: %q", got)
			}
			if got := fileSize(t, path); got != size {
				t.Fatalf("the writer's batch after the other's close changed the file from %d to %d bytes: its zero tail was gone", size, got)
			}
			h.in.Close()
			if got := h.line(t); got != "closed" {
				t.Fatalf("writer's close: %q", got)
			}
			h.cmd.Wait()
			checkPlain(t, path, want+1)
			if rep, err := Verify(ctx, r.Dir()); err != nil || rep.Events != want+1 {
				t.Fatalf("Verify: %v %+v", err, rep)
			}
		})
	}
}

// checkPlain fails unless the file at path is n lines of JSON Lines with
// no zero tail.
func checkPlain(t *testing.T, path string, n int64) {
	t.Helper()
	b := readBytes(t, path)
	if bytes.IndexByte(b, 0) >= 0 || !bytes.HasSuffix(b, newline) || int64(bytes.Count(b, newline)) != n {
		t.Fatalf("after the last writer closed events.jsonl is not %d lines of JSON Lines (%d bytes, %d lines, NUL at %d)",
			n, len(b), bytes.Count(b, newline), bytes.IndexByte(b, 0))
	}
}
