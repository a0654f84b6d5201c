package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestOpenWaitsForWriterMarkWithinCtx: a writable open waits for its
// writer mark while another open file holds it exclusive (a closing
// writer that trims, here one that never lets go), and gives up when its
// ctx ends instead of waiting on; once the mark is free the open goes on.
func TestOpenWaitsForWriterMarkWithinCtx(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run-1")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	r, err := OpenRunDir(context.Background(), dir, Policy{})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(dir, eventsFile), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := (osFile{f}).WriterLock(true, false); err != nil {
		t.Skipf("no writer mark on this file system: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		r, err := OpenRunDir(ctx, dir, Policy{})
		if err == nil {
			r.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("open while the writer mark is held exclusive: %v, want context.DeadlineExceeded", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the open still waits for the writer mark 30 s after its ctx ended")
	}
	if err := (osFile{f}).WriterUnlock(); err != nil {
		t.Fatal(err)
	}
	r, err = OpenRunDir(context.Background(), dir, Policy{})
	if err != nil {
		t.Fatalf("open once the mark is free: %v", err)
	}
	r.Close()
}
