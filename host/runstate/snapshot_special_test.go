package runstate

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/obversa/obversa/host/graph"
)

// TestSnapshotNotARegularFile: a FIFO, a device behind a symlink or a
// directory in the fold snapshot's place is ignored by readers, which
// fold the whole record at once, and reported by verify — never waited
// on: a FIFO held every reader (status, the worker saving as it ends) in
// open for good, and /dev/zero was read until memory ran out.
func TestSnapshotNotARegularFile(t *testing.T) {
	ctx := context.Background()
	run, dir := storeRecord(t, richRun(t)...)
	full, err := Load(ctx, run)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, SnapshotFile)
	for _, tt := range []struct {
		name  string
		plant func() error
	}{
		{"fifo", func() error { return syscall.Mkfifo(path, 0o644) }},
		{"symlink to /dev/zero", func() error { return os.Symlink("/dev/zero", path) }},
		{"directory", func() error { return os.Mkdir(path, 0o755) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if err := os.RemoveAll(path); err != nil {
				t.Fatal(err)
			}
			if err := tt.plant(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			var got *State
			go func() {
				var err error
				if got, err = LoadWithSnapshot(ctx, run, dir); err == nil {
					err = CheckSnapshot(ctx, run, dir)
				}
				done <- err
			}()
			select {
			case err := <-done:
				if !errors.Is(err, ErrSnapshotInvalid) {
					t.Fatalf("LoadWithSnapshot, then CheckSnapshot: %v; want a fold and ErrSnapshotInvalid", err)
				}
			case <-time.After(20 * time.Second):
				t.Fatalf("a reader still waits on the %s in the snapshot's place after 20 s", tt.name)
			}
			if d := cmp.Diff(full, got, deep...); d != "" {
				t.Errorf("reader's fold (-full +got):\n%s", d)
			}
		})
	}
}

// TestSnapshotResultWithoutKind: a snapshot whose finished result has
// no kind field is refused by the restore, as the fold refuses such an
// event: restored, it encoded as kind "", which no restore reads back.
func TestSnapshotResultWithoutKind(t *testing.T) {
	full, err := record(t, richRun(t)...)
	if err != nil {
		t.Fatal(err)
	}
	if full.Finished() == nil {
		t.Fatal("richRun does not finish")
	}
	payload, err := full.encodePayload()
	if err != nil {
		t.Fatal(err)
	}
	// Blanked to spaces: the JSON stays valid and the payload's framing
	// (lengths) unchanged.
	kind := []byte(`"kind":"complete",`)
	if bytes.Count(payload, kind) != 1 {
		t.Fatalf("the payload holds %q %d times", kind, bytes.Count(payload, kind))
	}
	cut := bytes.Replace(payload, kind, bytes.Repeat([]byte(" "), len(kind)), 1)
	if err := New().restorePayload(cut, false); !errors.Is(err, ErrSnapshotInvalid) || !errors.Is(err, graph.ErrInvalidEvent) {
		t.Fatalf("restore of a result without a kind: %v, want ErrSnapshotInvalid and graph.ErrInvalidEvent", err)
	}
	if err := New().restorePayload(payload, false); err != nil {
		t.Fatalf("restore of the payload itself: %v", err)
	}
}
