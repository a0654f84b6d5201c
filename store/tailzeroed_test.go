package store

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"testing"
)

// TestWriterRefusesAfterItsLastLineChanged: a writer (another process)
// whose last acknowledged line was zeroed or edited on disk refuses its
// next batch with CORRUPT_EVENT_STREAM and writes nothing — it used to
// append after the hole, and a later open cut both batches aside as torn
// or took the shorter stream for the record.
func TestWriterRefusesAfterItsLastLineChanged(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		edit func(line []byte) // changes the last line in place
	}{
		{"whole line zeroed", func(l []byte) { clear(l) }},
		{"line feed zeroed", func(l []byte) { l[len(l)-1] = 0 }},
		{"line feed edited", func(l []byte) { l[len(l)-1] = 'x' }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newTestRun(t, Policy{})
			path := eventsPath(r)
			h := startHelper(t, "writer", "STORE_DIR="+r.Dir())
			if got := h.line(t); got != "open" {
				t.Fatalf("writer: %q", got)
			}
			for i := 1; i <= 2; i++ {
				fmt.Fprintln(h.in, "append")
				if got, want := h.line(t), fmt.Sprintf("ok %d", i); got != want {
					t.Fatalf("append %d: %q, want %q", i, got, want)
				}
			}
			b := readBytes(t, path)
			end := bytes.IndexByte(b, 0)
			start := bytes.LastIndexByte(b[:end-1], '\n') + 1
			tc.edit(b[start:end])
			f, err := os.OpenFile(path, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.WriteAt(b[start:end], int64(start)); err != nil {
				t.Fatal(err)
			}
			f.Close()
			fmt.Fprintln(h.in, "append")
			if got := h.line(t); got != "err CORRUPT_EVENT_STREAM" {
				t.Fatalf("append after the last line changed: %q, want err CORRUPT_EVENT_STREAM", got)
			}
			if got := readBytes(t, path); !bytes.Equal(got, b) {
				t.Fatalf("the refused append changed the file (%d bytes before, %d after)", len(b), len(got))
			}
			ro, err := OpenRunDirReadOnly(context.Background(), r.Dir())
			if err != nil {
				t.Fatal(err)
			}
			defer ro.Close()
			if got := ro.Rev(); got != 1 {
				t.Fatalf("a reader that knew nothing sees rev %d, want 1 (the changed line is not a complete batch)", got)
			}
		})
	}
}
