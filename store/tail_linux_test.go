package store

import (
	"context"
	"os"
	"syscall"
	"testing"
)

// TestNoZeroTailOnASmallDevice: on a file system with less room than
// tailRoomFactor fills, appends are plain (the file is its lines), so a
// device that fills stops the run at the event that does not fit.
func TestNoZeroTailOnASmallDevice(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a small tmpfs needs root (CI runs as root)")
	}
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=8m"); err != nil {
		t.Skipf("mount a tmpfs: %v", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
	ctx := context.Background()
	s, err := Open(dir, "ns")
	if err != nil {
		t.Fatal(err)
	}
	rec, err := s.CreateRun(ctx, "r", Policy{})
	if err != nil {
		t.Fatal(err)
	}
	r := rec.(*Run)
	defer r.Close()
	if _, err := r.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, r.events, 0, NewEvent{Type: "t", Data: "x"})
	mustAppend(t, r.events, 1, NewEvent{Type: "t", Data: "y"})
	if size, lines := fileSize(t, eventsPath(r)), int64(len(readEvents(t, eventsPath(r)))); size != lines {
		t.Fatalf("on an 8 MiB device the file is %d bytes for %d bytes of lines: a zero tail was filled", size, lines)
	}
}
