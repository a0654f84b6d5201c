package store

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// TestFirstEventBytes: the size FirstEventBytes gives is the size of the
// line an unnamed first event appended alone takes in the record, and a
// max_batch_bytes of exactly that size takes the event.
func TestFirstEventBytes(t *testing.T) {
	ctx := context.Background()
	data := []byte(`{"a":"xyz","n":12}`)
	want := FirstEventBytes("graph:run-started", data)
	for _, limit := range []int64{want - 1, want} {
		dir := filepath.Join(t.TempDir(), "r")
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		r, err := OpenRunDir(ctx, dir, Policy{MaxBatchBytes: limit})
		if err != nil {
			t.Fatal(err)
		}
		own, err := r.Lock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		_, err = r.Append(ctx, 0, NewEvent{Type: "graph:run-started", Data: json.RawMessage(data)})
		own.Release()
		_ = r.Close()
		if limit < want {
			if err == nil {
				t.Errorf("max_batch_bytes = %d took a %d-byte first event", limit, want)
			}
			continue
		}
		if err != nil {
			t.Fatalf("max_batch_bytes = %d: %v", limit, err)
		}
		b, err := os.ReadFile(filepath.Join(dir, eventsFile))
		if err != nil {
			t.Fatal(err)
		}
		if int64(len(b)) != want {
			t.Errorf("the first line is %d bytes, FirstEventBytes said %d:\n%s", len(b), want, b)
		}
	}
}
