package store

import (
	"bytes"
	"context"
	"errors"
	"os"
	"testing"
)

// TestShortenedStreamIsNotWrittenPast: a stream cut below a handle's
// committed end (an edit, or a restore of an older copy) is damage the
// handle reports: its next Append fails with CORRUPT_EVENT_STREAM and
// writes nothing — not its batch after a hole of NULs where committed
// events were — and its close leaves the file as it found it, not
// extended back with NULs.
func TestShortenedStreamIsNotWrittenPast(t *testing.T) {
	t.Parallel()
	for _, within := range []bool{true, false} {
		name := map[bool]string{true: "cut inside a line", false: "cut at a line's end"}[within]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			r := newTestRun(t, Policy{})
			path := eventsPath(r)
			size := func() int64 {
				fi, err := os.Stat(path)
				if err != nil {
					t.Fatal(err)
				}
				return fi.Size()
			}
			mustAppend(t, r.events, 0, NewEvent{ID: "one", Type: "t", Data: "first"})
			mustAppend(t, r.events, 1, NewEvent{ID: "two", Type: "t", Data: "second"})
			lines := readEventLines(t, path)
			cut := int64(bytes.IndexByte(lines, '\n') + 1) // the second line gone whole
			if within {
				cut += 10
			}
			if err := os.Truncate(path, cut); err != nil {
				t.Fatal(err)
			}
			var ce *CorruptError
			if _, err := r.events.Append(ctx, 2, NewEvent{ID: "three", Type: "t"}); !errors.As(err, &ce) {
				t.Fatalf("Append to a stream cut to %d bytes below its committed %d: %v, want CORRUPT_EVENT_STREAM", cut, len(lines), err)
			}
			if got := size(); got != cut {
				t.Fatalf("the refused Append left the file %d bytes long, want the %d it found", got, cut)
			}
			if err := r.Close(); err != nil {
				t.Fatal(err)
			}
			if got := size(); got != cut {
				t.Fatalf("closing the handle left the file %d bytes long, want the %d it found", got, cut)
			}
		})
	}
}

// readEventLines is the file's bytes up to its zero tail.
func readEventLines(t *testing.T, path string) []byte {
	b := readBytes(t, path)
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return b
}
